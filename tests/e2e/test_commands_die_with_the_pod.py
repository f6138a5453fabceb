"""No command outlives its pod: after a ``kill -9`` or a SIGHUP of ``pod serve`` while ``bash``
runs, neither the command nor a ``setsid`` child it started is left running."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from orchestrator.adapters.procs.supervisor import proc_stat
from orchestrator.serving.client import PodClient
from tests.e2e.harness import (
    ScriptedReply,
    ScriptedToolCall,
    collect_until,
    running_pod,
    start_pod_process,
)
from tests.processes import (
    cgroup_writable,
    gone,
    join,
    kill_all,
    private_cgroup,
    unique_seconds,
    wait_recorded,
    wait_running,
)


def _script(path: Path, command: str) -> Path:
    path.write_text(
        json.dumps(
            {
                "replies": [
                    {
                        "text": "on it",
                        "tool_calls": [{"name": "bash", "input": {"command": command}}],
                    },
                    {"text": "done"},
                ]
            }
        )
    )
    return path


def _clean_up(proc: subprocess.Popen[bytes], seconds: int) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    kill_all(f"sleep {seconds}")
    kill_all(f"sleep {seconds + 1}")


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGHUP])
async def test_a_running_command_and_its_setsid_child_die_with_the_pod(
    workspace: Path, short_dir: Path, how: int
) -> None:
    seconds = unique_seconds()
    # `sleep 300; setsid sleep 301 &` of the issue, ordered so that both run at once.
    command = f"setsid sleep {seconds + 1} & sleep {seconds}"
    script = short_dir / "script.json"
    script.write_text(
        json.dumps(
            {
                "replies": [
                    {
                        "text": "on it",
                        "tool_calls": [{"name": "bash", "input": {"command": command}}],
                    },
                    {"text": "done"},
                ]
            }
        )
    )
    proc = start_pod_process(workspace, short_dir / "p.sock", short_dir / "s.jsonl", script)
    try:
        client = await PodClient.connect(short_dir / "p.sock")
        await client.send("run", {"input": "go"})
        await client.wait_for("status", state="executing_tools")
        wait_running(f"sleep {seconds}", 1)
        wait_running(f"sleep {seconds + 1}", 1)
        os.kill(proc.pid, how)
        proc.wait(20)
        await client.close()
        assert gone(f"sleep {seconds}"), "the command outlived its pod"
        assert gone(f"sleep {seconds + 1}"), "the setsid child outlived its pod"
    finally:
        _clean_up(proc, seconds)
    if how == signal.SIGHUP:
        assert proc.returncode == 0  # a clean shutdown, as for SIGTERM


@pytest.mark.parametrize("cgroup", [False, True], ids=["record", "cgroup"])
async def test_what_a_killed_supervisor_left_is_ended_and_reported_at_restart(
    workspace: Path, short_dir: Path, cgroup: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The one way past the supervisor: kill it first (kill -9 of its process group, say).
    # Its record (or its cgroup) still names the command's processes: the next pod ends them.
    if cgroup and not cgroup_writable():
        pytest.skip("no writable cgroup v2 hierarchy here")
    if not cgroup:
        monkeypatch.setenv("POD_PROCS_CGROUP", "0")
    seconds = unique_seconds()
    script = _script(short_dir / "script.json", f"setsid sleep {seconds + 1} & sleep {seconds}")
    socket, session = short_dir / "p.sock", short_dir / "s.jsonl"
    with private_cgroup() if cgroup else contextlib.nullcontext(None) as group:
        await _kill_supervisor_then_restart(workspace, socket, session, script, seconds, group)


async def _kill_supervisor_then_restart(
    workspace: Path, socket: Path, session: Path, script: Path, seconds: int, group: Path | None
) -> None:
    preexec = join(group) if group is not None else None
    proc = start_pod_process(workspace, socket, session, script, preexec=preexec)
    try:
        client = await PodClient.connect(socket)
        await client.send("run", {"input": "go"})
        await client.wait_for("status", state="executing_tools")
        [sleeper] = wait_running(f"sleep {seconds}", 1)
        wait_running(f"sleep {seconds + 1}", 1)
        shell = proc_stat(sleeper)
        assert shell is not None
        supervisor = proc_stat(shell[1])
        assert supervisor is not None
        await asyncio.to_thread(wait_recorded, supervisor[1], {sleeper})
        os.kill(supervisor[1], signal.SIGKILL)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(20)
        await client.close()
        assert wait_running(f"sleep {seconds + 1}", 1)  # left running, for now

        proc = start_pod_process(workspace, socket, session, script, "--continue", preexec=preexec)
        client = await PodClient.connect(socket)
        history = await client.request("get_history")
        alerts = [a["message"] for a in history.data.get("alerts") or []]
        await client.send("shutdown")
        await client.close()
        proc.wait(20)
        assert gone(f"sleep {seconds}") and gone(f"sleep {seconds + 1}")
        assert any(
            a.startswith("ended 3 processes that a stopped pod's commands left running")
            and f"sleep {seconds + 1}" in a
            for a in alerts
        ), alerts
    finally:
        _clean_up(proc, seconds)


async def test_background_jobs_run_on_until_the_pod_stops(workspace: Path, short_dir: Path) -> None:
    # Jobs that let go of the output outlive their call (a dev server the next command
    # uses), not the pod: its shutdown ends them, setsid or not, while the process lives on.
    seconds = unique_seconds()
    command = f"setsid sleep {seconds + 1} >/dev/null 2>&1 & sleep {seconds} >/dev/null 2>&1 &"
    bash = ScriptedToolCall(name="bash", input={"command": command})
    replies = [ScriptedReply(tool_calls=[bash]), ScriptedReply(text="started")]
    try:
        async with running_pod(workspace, short_dir, replies=replies, allow_bash=True) as served:
            c = await served.client()
            await c.send("run", {"input": "start them"})
            events = await collect_until(c, "run_end", timeout=20)
            assert events[-1].data == {"result": "finished"}
            wait_running(f"sleep {seconds}", 1)
            wait_running(f"sleep {seconds + 1}", 1)
            await c.close()
        assert gone(f"sleep {seconds}") and gone(f"sleep {seconds + 1}")
    finally:
        kill_all(f"sleep {seconds}")
        kill_all(f"sleep {seconds + 1}")
