"""kill -9 in the middle of a turn, restart with --continue: nothing committed is lost."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from pathlib import Path

from orchestrator.serving.client import PodClient
from tests.e2e.harness import collect_until, start_pod_process


async def test_kill_9_mid_tool_then_continue(workspace: Path, short_dir: Path) -> None:
    script = short_dir / "script.json"
    script.write_text(
        json.dumps(
            {
                "replies": [
                    {"text": "first answer"},
                    {
                        "text": "running a long command",
                        "tool_calls": [{"name": "bash", "input": {"command": "sleep 30"}}],
                    },
                    {"text": "after the crash"},
                ]
            }
        )
    )
    socket = short_dir / "p.sock"
    session = short_dir / "session.jsonl"
    proc = start_pod_process(workspace, socket, session, script)
    try:
        c = await PodClient.connect(socket)
        await c.send("run", {"input": "hello"})
        await collect_until(c, "run_end")
        await c.send("run", {"input": "do the long thing"})
        await c.wait_for("status", state="executing_tools")
        before = (await c.request("get_history")).data["items"]
        # The command's write-ahead record is on disk once it runs (what this test is about).
        for _ in range(1000):
            if b'"tool_start"' in session.read_bytes():
                break
            await asyncio.sleep(0.01)
        else:
            raise AssertionError("the running command has no tool_start record")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        await c.close()
    finally:
        if proc.poll() is None:
            proc.kill()

    assert [i["kind"] for i in before] == [
        "user_message", "assistant", "user_message", "assistant",
    ]  # fmt: skip
    assert socket.exists()  # a kill -9 leaves a stale socket; the restart must clear it
    script.write_text(json.dumps({"replies": [{"text": "after the crash"}]}))
    proc = start_pod_process(workspace, socket, session, script, "--continue")
    try:
        # Killed as it started the command, the first pod may have left a forked child
        # holding its listening socket for a moment: start_pod_process waited for the new
        # pod's socket, not that one (socket_is_live asks who listens).
        c = await PodClient.connect(socket)
        status = await c.request("get_status")
        assert status.data["status"] == "paused"
        after = (await c.request("get_history")).data["items"]
        assert after[: len(before)] == before  # nothing committed was lost or duplicated
        # The running command had a write-ahead record: it is closed as crashed, not re-run.
        [closing] = after[len(before) :]
        assert closing["kind"] == "tool_result" and closing["is_error"]
        assert closing["summary"].startswith("[Interrupted by a pod crash] bash was still running")
        await c.send("run", {"input": "what happened?"})
        events = await collect_until(c, "run_end")
        # The scripted provider rejects wire-invalid requests like the API: finished means valid.
        assert events[-1].data == {"result": "finished"}
        final = (await c.request("get_history")).data["items"]
        assert final[: len(after)] == after
        assert final[len(after)]["origin"] == "interrupt"
        await c.send("shutdown")
        await c.close()
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()


async def test_a_command_interrupted_by_a_crash_never_runs_twice(
    workspace: Path, short_dir: Path
) -> None:
    """The reproduction of issue 11: kill -9 while bash sleeps, restart, resume: one line."""
    command = "echo started; echo ran >> counter.txt; sleep 30"
    script = short_dir / "script.json"
    script.write_text(
        json.dumps(
            {
                "replies": [
                    {"tool_calls": [{"name": "bash", "input": {"command": command}}]},
                    {"text": "done"},
                ]
            }
        )
    )
    socket = short_dir / "p.sock"
    session = short_dir / "session.jsonl"
    proc = start_pod_process(workspace, socket, session, script)
    try:
        c = await PodClient.connect(socket)
        await c.send("run", {"input": "count"})
        await c.wait_for("status", state="executing_tools")
        deadline = time.monotonic() + 10
        while not (workspace / "counter.txt").exists():
            assert time.monotonic() < deadline, "the command never ran"
            time.sleep(0.02)
        time.sleep(0.3)  # let it print and sleep: the pod dies mid-command
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        await c.close()
    finally:
        if proc.poll() is None:
            proc.kill()

    script.write_text(json.dumps({"replies": [{"text": "done"}]}))
    proc = start_pod_process(workspace, socket, session, script, "--continue")
    try:
        c = await PodClient.connect(socket)
        assert (await c.request("get_status")).data["status"] == "paused"
        await c.send("resume")
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "finished"}
        history = (await c.request("get_history")).data["items"]
        [result] = [i for i in history if i["kind"] == "tool_result"]
        assert result["summary"].startswith("[Interrupted by a pod crash]")
        assert "started" in result["content"]  # the output it printed before the crash
        await c.send("shutdown")
        await c.close()
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert (workspace / "counter.txt").read_text() == "ran\n"
    assert not list((short_dir / "session.out").glob("*"))  # spools are cleaned up
