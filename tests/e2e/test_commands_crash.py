"""kill -9 while a custom command's ``!`` lines run or wait: no line ever runs twice, and a
line that never started runs after the restart."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from orchestrator.serving.client import PodClient
from tests.e2e.harness import collect_until, start_pod_process

THREE_LINES = """Counted:
one: !`echo one >> counter.txt; echo first-done`
two: !`echo two >> counter.txt; echo started-two; sleep 30`
three: !`echo three >> counter.txt; echo third-done`
"""


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    monkeypatch.setenv("HOME", str(path))
    return path


def write_command(workspace: Path, name: str, body: str) -> None:
    folder = workspace / ".pod" / "commands"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.md").write_text(body)


def wait_for_text(path: Path, text: str) -> None:
    deadline = time.monotonic() + 20
    while text not in (path.read_text() if path.exists() else ""):
        assert time.monotonic() < deadline, f"{text!r} never reached {path}"
        time.sleep(0.02)


def kill_9(proc: object) -> None:
    os.kill(proc.pid, signal.SIGKILL)  # type: ignore[attr-defined]
    proc.wait(10)  # type: ignore[attr-defined]


async def test_a_line_running_at_a_crash_is_not_run_again(workspace: Path, short_dir: Path) -> None:
    write_command(workspace, "count", THREE_LINES)
    script = short_dir / "script.json"
    script.write_text(json.dumps({"replies": [{"text": "never sent"}]}))
    socket, session = short_dir / "p.sock", short_dir / "session.jsonl"
    proc = start_pod_process(workspace, socket, session, script)
    try:
        c = await PodClient.connect(socket)
        await c.send("run", {"input": "/count"})
        wait_for_text(workspace / "counter.txt", "two")
        time.sleep(0.3)  # let it print and sleep: the pod dies mid-line
        kill_9(proc)
        await c.close()
    finally:
        if proc.poll() is None:
            proc.kill()

    script.write_text(json.dumps({"replies": [{"text": "done"}]}))
    proc = start_pod_process(workspace, socket, session, script, "--continue")
    try:
        c = await PodClient.connect(socket)
        assert (await c.status()).status == "paused"
        await c.send("resume")
        events = await collect_until(c, "run_end", timeout=30)
        assert events[-1].data == {"result": "finished"}
        history = (await c.history()).items
        [message] = [item for item in history if item["kind"] == "user_message"]
        assert message["segments"] == [{"kind": "workflow_invoke", "slug": "count"}]
        text = message["text"]
        assert "one: first-done" in text
        assert "two: [the command `echo two" in text and "was not run again" in text
        assert "three: third-done" in text
        assert not [item for item in history if item["kind"] == "tool_result"]
        await c.send("shutdown")
        await c.close()
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert (workspace / "counter.txt").read_text() == "one\ntwo\nthree\n"


async def test_a_line_waiting_for_approval_at_a_crash_asks_again(
    workspace: Path, short_dir: Path
) -> None:
    write_command(workspace, "once", "Ran: !`echo ran >> counter.txt; echo ok`\n")
    script = short_dir / "script.json"
    script.write_text(json.dumps({"replies": [{"text": "never sent"}]}))
    socket, session = short_dir / "p.sock", short_dir / "session.jsonl"
    proc = start_pod_process(workspace, socket, session, script, unattended=False)
    try:
        c = await PodClient.connect(socket)
        await c.send("run", {"input": "/once"})
        await c.wait_for("approval_request", timeout=20)
        kill_9(proc)
        await c.close()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert not (workspace / "counter.txt").exists()

    script.write_text(json.dumps({"replies": [{"text": "done"}]}))
    proc = start_pod_process(workspace, socket, session, script, "--continue", unattended=False)
    try:
        c = await PodClient.connect(socket)
        await c.send("resume")
        asked = await c.wait_for("approval_request", timeout=20)
        await c.send("approve", {"id": asked.data["id"]})
        events = await collect_until(c, "run_end", timeout=30)
        assert events[-1].data == {"result": "finished"}
        [message] = [i for i in (await c.history()).items if i["kind"] == "user_message"]
        assert message["text"] == "Ran: ok"
        await c.send("shutdown")
        await c.close()
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert (workspace / "counter.txt").read_text() == "ran\n"
