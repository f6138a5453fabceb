"""kill -9 of a ``pod host`` serving 100 pods, some in the middle of a command: a new host
binds them all again, and each comes back complete and wire-valid, the interrupted turns
paused, and no command run twice."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from orchestrator.config.model import PodConfig
from orchestrator.core.history import UserMessage, item_from_json
from orchestrator.core.repair import close_orphans, interrupt_note
from orchestrator.core.segments import TextSegment
from orchestrator.core.validator import validate_wire
from orchestrator.core.wire import to_wire
from orchestrator.serving.client import PodClient
from orchestrator.serving.host import ask_host
from orchestrator.serving.server import socket_is_live
from tests.e2e.harness import collect_until

PODS = 100
BUSY = 20


def start_host(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "cli", "host"], env=env, stdout=out, stderr=out,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
    control = Path(env["XDG_RUNTIME_DIR"]) / "pod" / "host.sock"
    deadline = time.monotonic() + 20
    while not socket_is_live(control):
        assert proc.poll() is None, log.read_text()
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.05)
    return proc


def valid_after_restart(items: list[dict[str, Any]], paused: bool) -> list[Any]:
    parsed = [item_from_json(i) for i in items]
    extra: list[Any] = [*close_orphans(parsed), interrupt_note()] if paused else []
    extra.append(UserMessage(segments=[TextSegment(text="next")], text="next"))
    return validate_wire(to_wire(parsed + extra))


async def test_a_host_killed_with_100_pods_brings_every_one_back(
    tmp_path: Path, short_dir: Path
) -> None:
    env = {**os.environ}
    env.pop("POD_NO_HOST", None)
    runtime = Path(env["XDG_RUNTIME_DIR"]) / "pod"
    control = runtime / "host.sock"
    executions = tmp_path / "executions.log"
    script = tmp_path / "script.json"
    command = f'echo "$POD_CALL" >> {executions}; echo started; sleep 30'
    script.write_text(
        json.dumps(
            {
                "replies": [
                    {"text": "hi"},
                    {"tool_calls": [{"name": "bash", "input": {"command": command}}]},
                    {"text": "done"},
                ]
            }
        )
    )
    log = tmp_path / "host.log"
    host = start_host(env, log)
    sockets: dict[str, Path] = {}
    try:
        for n in range(PODS):
            name = f"p{n:03d}"
            workspace = tmp_path / "ws" / name
            workspace.mkdir(parents=True)
            config = PodConfig(
                workspace=workspace, name=name, provider="scripted", scripted_script=script,
                sandbox={"mode": "off"}, permissions={"mode": "accept-edits"}, allow_bash=True,
                checkpoints=False, tool_env={"POD_CALL": name},
            )  # fmt: skip
            row = await ask_host("load", {"config": config.model_dump(mode="json")}, path=control)
            sockets[name] = Path(row["socket"])

        # Every pod has a conversation; the first BUSY start a 30 s command and are killed in it.
        async def first_turn(name: str, busy: bool) -> None:
            client = await PodClient.connect(sockets[name])
            await client.send("run", {"input": "hello"})
            await collect_until(client, "run_end", timeout=60)
            if busy:
                await client.send("run", {"input": "run it"})
                await collect_until(client, "tool_output_delta", timeout=60)
            await client.close()

        for start in range(0, PODS, 25):
            names = list(sockets)[start : start + 25]
            await asyncio.gather(*(first_turn(n, int(n[1:]) < BUSY) for n in names))
        for _ in range(200):  # every busy command has written its line
            if len(executions.read_text().split()) == BUSY:
                break
            await asyncio.sleep(0.05)
        host.send_signal(signal.SIGKILL)
        host.wait(10)
    finally:
        if host.poll() is None:
            host.kill()
    assert sorted(executions.read_text().split()) == [f"p{n:03d}" for n in range(BUSY)]
    host = start_host(env, log)
    try:
        rows = (await ask_host("list", path=control))["pods"]
        assert len(rows) == PODS and not any(r["loaded"] for r in rows)
        for name, socket in sockets.items():
            client = await PodClient.connect(socket)  # loads it from its session
            status = await client.status()
            items = (await client.request("get_history")).data["items"]
            await client.close()
            busy = int(name[1:]) < BUSY
            assert status.status == ("paused" if busy else "idle"), (name, status.status)
            assert valid_after_restart(items, paused=busy) == [], name
            prompts = [i["text"] for i in items if i["kind"] == "user_message"]
            assert prompts == (["hello", "run it"] if busy else ["hello"]), name
            if busy:
                results = [i for i in items if i["kind"] == "tool_result"]
                assert len(results) == 1 and "crash" in results[0]["summary"].lower(), results
        await ask_host("stop", path=control)
        host.wait(60)
    finally:
        if host.poll() is None:
            host.kill()
    # Nothing ran a second time: the commands the kill interrupted were closed, not re-run.
    assert sorted(executions.read_text().split()) == [f"p{n:03d}" for n in range(BUSY)]
