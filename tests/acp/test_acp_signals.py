"""``pod acp`` stopped by a signal takes its pods along: SIGTERM, SIGINT and SIGHUP shut them
down as a closed stdin does, and after a SIGKILL they die with it (their supervisor)."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from orchestrator.adapters.procs import descendants
from orchestrator.adapters.procs.supervisor import alive, proc_stat
from tests.acp.client import acp_agent, acp_env, command_then_done, start_two_and_run, stop_with
from tests.processes import gone, kill_all, unique_seconds


@pytest.fixture
def env(short_dir: Path, tmp_path: Path) -> dict[str, str]:
    return acp_env(dict(os.environ), short_dir, tmp_path / "state")


def _pod_serve_processes(root: int) -> dict[int, int]:
    """The ``pod serve`` processes under ``root``, each with its start time."""
    found = {}
    for pid in descendants(root):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        stat = proc_stat(pid)
        if cmdline[1:4] == [b"-m", b"cli", b"serve"] and stat is not None:
            found[pid] = stat[2]
    return found


async def _all_gone(processes: dict[int, int], within_s: float = 20.0) -> bool:
    for _ in range(int(within_s / 0.05)):
        if not any(alive(pid, started) for pid, started in processes.items()):
            return True
        await asyncio.sleep(0.05)
    return False


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGKILL])
async def test_no_pod_outlives_pod_acp(
    env: dict[str, str], workspace: Path, tmp_path: Path, how: int
) -> None:
    # Each session's pod runs a command that started a setsid child: none of it may stay.
    seconds = unique_seconds()
    args = command_then_done(tmp_path, f"setsid sleep {seconds + 1} & sleep {seconds}")
    pods: dict[int, int] = {}
    try:
        async with acp_agent(env, *args) as (conn, _client, process):
            running = await start_two_and_run(conn, workspace, seconds)
            pods = _pod_serve_processes(process.pid)
            assert len(pods) == 2, pods
            assert await stop_with(process, how, running) == (
                -how if how == signal.SIGKILL else 128 + how
            )
            assert await _all_gone(pods), "a pod outlived pod acp"
            assert gone(f"sleep {seconds}") and gone(f"sleep {seconds + 1}")
    finally:
        for pid, started in pods.items():  # a failed test leaves nothing either
            if alive(pid, started):
                os.kill(pid, signal.SIGKILL)
        kill_all(f"sleep {seconds}")
        kill_all(f"sleep {seconds + 1}")
