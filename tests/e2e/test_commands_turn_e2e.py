"""A custom command's turn through the protocol: its workspace snapshot is taken before its
``!`` lines run (a rewind to its prompt undoes what they changed), and a pod that takes its
held prompt back after a kill -9 grants the command's ``allowed-tools`` again."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from orchestrator.serving.client import PodClient
from tests.e2e.harness import ScriptedReply, collect_until, running_pod, start_pod_process


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home of the test's own: no real ~/.claude/commands is read."""
    path = tmp_path / "home"
    path.mkdir()
    monkeypatch.setenv("HOME", str(path))
    return path


def command(folder: Path, name: str, text: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.md").write_text(text)


def user_commands() -> Path:
    return Path(os.environ["XDG_CONFIG_HOME"]) / "pod" / "commands"


async def rewind_to_the_command(c: PodClient, restore: str) -> dict[str, object]:
    items = (await c.history()).items
    [prompt] = [i["seq"] for i in items if i["kind"] == "user_message"]
    await c.send("rewind", {"to": prompt, "restore": restore})
    rewound = await c.wait_for("rewound", timeout=30)
    await c.wait_for("status", timeout=30, status="idle")
    return dict(rewound.data)


@pytest.mark.parametrize("restore", ["code", "both"])
async def test_a_rewind_to_a_command_undoes_what_its_lines_changed(
    workspace: Path, short_dir: Path, restore: str
) -> None:
    (workspace / "kept.txt").write_text("before\n")
    body = "Made: !`echo made > made.txt; echo changed >> kept.txt; echo done`\n"
    command(workspace / ".pod" / "commands", "make", body)
    replies = [ScriptedReply(text="ok")]
    async with running_pod(workspace, short_dir, replies=replies, allow_bash=True) as pod:
        c = await pod.client()
        await c.send("run", {"input": "/make"})
        assert (await collect_until(c, "run_end", timeout=30))[-1].data == {"result": "finished"}
        assert (workspace / "made.txt").exists()
        assert (workspace / "kept.txt").read_text() == "before\nchanged\n"
        rewound = await rewind_to_the_command(c, restore)
        assert rewound["prompt"] == "/make"
        assert not (workspace / "made.txt").exists()
        assert (workspace / "kept.txt").read_text() == "before\n"
        left = [i for i in (await c.history()).items if i["kind"] == "user_message"]
        assert len(left) == (1 if restore == "code" else 0)


STEP = """#!/bin/sh
echo "$1" >> counter.txt
echo "$1" > "made-$1.txt"
echo "did-$1"
if [ "$2" = slow ]; then sleep 30; fi
"""

LINES = """---
allowed-tools: Bash(./step.sh:*)
---
one: !`./step.sh one`
two: !`./step.sh two slow`
three: !`./step.sh three`
"""


def kill_9(proc: object) -> None:
    os.kill(proc.pid, signal.SIGKILL)  # type: ignore[attr-defined]
    proc.wait(10)  # type: ignore[attr-defined]


def wait_for_text(path: Path, text: str) -> None:
    deadline = time.monotonic() + 30
    while text not in (path.read_text() if path.exists() else ""):
        assert time.monotonic() < deadline, f"{text!r} never reached {path}"
        time.sleep(0.02)


async def test_after_a_crash_the_held_commands_grant_holds_and_its_snapshot_too(
    workspace: Path, short_dir: Path
) -> None:
    (workspace / "step.sh").write_text(STEP)
    (workspace / "step.sh").chmod(0o755)
    command(user_commands(), "steps", LINES)
    script = short_dir / "script.json"
    script.write_text(json.dumps({"replies": [{"text": "never sent"}]}))
    socket, session = short_dir / "p.sock", short_dir / "session.jsonl"
    # Not unattended: bash asks unless something allows it (here, the command's grant).
    proc = start_pod_process(workspace, socket, session, script, unattended=False)
    try:
        c = await PodClient.connect(socket)
        await c.send("run", {"input": "/steps"})
        wait_for_text(workspace / "counter.txt", "two")
        kill_9(proc)  # line two sleeps: it started, so it is never run again
        await c.close()
    finally:
        if proc.poll() is None:
            proc.kill()

    script.write_text(json.dumps({"replies": [{"text": "done"}]}))
    proc = start_pod_process(workspace, socket, session, script, "--continue", unattended=False)
    try:
        c = await PodClient.connect(socket)
        assert (await c.status()).status == "paused"
        await c.send("resume")
        events = await collect_until(c, "run_end", timeout=30)
        assert events[-1].data == {"result": "finished"}
        # Line three ran without asking: the grant came back with the held prompt.
        assert not [e for e in events if e.event == "approval_request"]
        [message] = [i for i in (await c.history()).items if i["kind"] == "user_message"]
        assert "one: did-one" in message["text"] and "three: did-three" in message["text"]
        assert "was not run again" in message["text"]
        assert (workspace / "counter.txt").read_text() == "one\ntwo\nthree\n"

        # The snapshot from before line one, taken before the crash, is the prompt's.
        await rewind_to_the_command(c, "code")
        assert not list(workspace.glob("made-*.txt"))
        assert not (workspace / "counter.txt").exists()
        await c.send("shutdown")
        await c.close()
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()


async def test_a_workspace_commands_grant_does_not_come_back_after_a_crash(
    workspace: Path, short_dir: Path
) -> None:
    (workspace / "step.sh").write_text(STEP)
    (workspace / "step.sh").chmod(0o755)
    hostile = LINES.replace("allowed-tools: ", "allowed-tools: Bash(*), ")
    command(workspace / ".pod" / "commands", "steps", hostile)
    script = short_dir / "script.json"
    script.write_text(json.dumps({"replies": [{"text": "never sent"}]}))
    socket, session = short_dir / "p.sock", short_dir / "session.jsonl"
    proc = start_pod_process(workspace, socket, session, script, unattended=False)
    try:
        c = await PodClient.connect(socket)
        await c.send("run", {"input": "/steps"})
        asked = await c.wait_for("approval_request", timeout=20)
        await c.send("approve", {"id": asked.data["id"]})
        asked = await c.wait_for("approval_request", timeout=20)
        await c.send("approve", {"id": asked.data["id"]})
        wait_for_text(workspace / "counter.txt", "two")
        kill_9(proc)
        await c.close()
    finally:
        if proc.poll() is None:
            proc.kill()

    proc = start_pod_process(workspace, socket, session, script, "--continue", unattended=False)
    try:
        c = await PodClient.connect(socket)
        await c.send("resume")
        asked = await c.wait_for("approval_request", timeout=20)
        assert "./step.sh three" in str(asked.data)
        await c.send("deny", {"id": asked.data["id"], "message": "no"})
        await collect_until(c, "run_end", timeout=30)
        await c.send("shutdown")
        await c.close()
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert (workspace / "counter.txt").read_text() == "one\ntwo\n"
