"""The sync wrapper in a plain script (no event loop of its own), against a real pod."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from tests.e2e.harness import ScriptedReply, running_pod

SCRIPT = """
import sys
from pathlib import Path

from orchestrator import SyncPod
from orchestrator.protocol import RunEndData, TextData
from orchestrator.serving.client_errors import NotRunning

with SyncPod.connect(Path(sys.argv[1])) as pod:
    text = ""
    for event in pod.run("hi"):
        if isinstance(event.payload, TextData) and event.event == "text_delta":
            text += event.payload.text
        if isinstance(event.payload, RunEndData):
            print("end", event.payload.result)
    print("text", text)
    try:
        pod.pause()
    except NotRunning as exc:
        print("refused", exc.code)
    print("state", pod.status().state)
    for event in pod.run("again"):
        break  # leaving a run early closes its iterator; the pod runs on
    print("left early")
"""


async def test_a_plain_script_runs_a_prompt_with_the_sync_wrapper(
    workspace: Path, short_dir: Path, tmp_path: Path
) -> None:
    replies = [ScriptedReply(text="hello from the pod"), ScriptedReply(text="more")]
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    async with running_pod(workspace, short_dir, replies=replies) as pod:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            str(script),
            str(pod.socket),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=Path(__file__).resolve().parents[4],
        )
        out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, err.decode()
    assert out.decode().splitlines() == [
        "end finished",
        "text hello from the pod",
        "refused not_running",
        "state idle",
        "left early",
    ]
