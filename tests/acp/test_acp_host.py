"""``pod acp`` with a pod host: each session's pod loads into the host (started when none
runs), and ends with ``pod acp`` however it ends: stdin closed, a signal, a kill -9."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from acp import schema

from orchestrator.adapters.session import load_session
from orchestrator.core.history import UserMessage
from orchestrator.serving.server import socket_is_live
from tests.acp.client import acp_agent, acp_env, command_then_done, start_two_and_run, stop_with
from tests.cli.helpers import pod
from tests.processes import gone, kill_all, unique_seconds


@pytest.fixture
def env(short_dir: Path, tmp_path: Path) -> Any:
    values = acp_env(dict(os.environ), short_dir, tmp_path / "state")
    values.pop("POD_NO_HOST", None)  # as a person's editor runs it
    yield values
    if socket_is_live(short_dir / "pod" / "host.sock"):
        pod(values, "host", "stop", timeout=30)


def _host_pods(env: dict[str, str]) -> dict[str, dict[str, Any]]:
    """The host's pods by name; none when the host has left (it leaves with its last pod)."""
    listed = pod(env, "host", "ls", "--json")
    if "no pod host is listening" in listed.stderr:
        return {}
    assert listed.returncode == 0, listed.stderr
    return {row["name"]: row for row in json.loads(listed.stdout)["pods"]}


async def _until_no_pods(env: dict[str, str], within_s: float = 30.0) -> None:
    """Until the host has no pods (or has left)."""
    for _ in range(int(within_s / 0.1)):
        if not await asyncio.to_thread(_host_pods, env):
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"the host still serves {await asyncio.to_thread(_host_pods, env)}")


async def test_a_session_pod_is_a_pod_of_the_host_and_goes_when_the_editor_does(
    env: dict[str, str], workspace: Path, short_dir: Path
) -> None:
    async with acp_agent(env, "--provider", "scripted") as (conn, client, process):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        done = await conn.prompt(
            session_id=session.session_id,
            prompt=[schema.TextContentBlock(type="text", text="hello host")],
        )
        assert done.stop_reason == "end_turn" and "hello host" in client.text()
        rows = await asyncio.to_thread(_host_pods, env)
        [(name, row)] = rows.items()
        assert name.startswith(f"acp-{workspace.name}-{process.pid}-")
        assert (row["loaded"], row["state"], row["clients"]) == (True, "idle", 1)
        assert Path(row["session"]).stem == session.session_id
        # Owned by pod acp: a restarted host must not serve it again with nobody to end it.
        registry = json.loads((short_dir / "pod" / "host.registry").read_text())
        assert [entry for entry in registry if name in entry["socket"]] == []
        serving = [line for line in _command_lines() if " serve " in line]
        assert not [line for line in serving if str(workspace) in line], "a pod serve ran"
    # The editor closed stdin: the pod was shut down, its session complete on disk.
    await _until_no_pods(env)
    loaded = load_session(Path(row["session"]))
    assert [i.text for i in loaded.items if isinstance(i, UserMessage)] == ["hello host"]
    assert not loaded.cut_off


def _command_lines() -> list[str]:
    lines = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                lines.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode())
    return lines


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL])
async def test_no_pod_of_pod_acp_outlives_it_in_the_host(
    env: dict[str, str], workspace: Path, tmp_path: Path, short_dir: Path, how: int
) -> None:
    seconds = unique_seconds()
    args = command_then_done(tmp_path, f"setsid sleep {seconds + 1} & sleep {seconds}")
    try:
        async with acp_agent(env, *args) as (conn, _client, process):
            running = await start_two_and_run(conn, workspace, seconds)
            assert len(await asyncio.to_thread(_host_pods, env)) == 2
            assert await stop_with(process, how, running) == (
                -how if how == signal.SIGKILL else 128 + how
            )
            # Even after a kill -9, the host saw its owner's connection close.
            await _until_no_pods(env)
            assert gone(f"sleep {seconds}") and gone(f"sleep {seconds + 1}")
    finally:
        kill_all(f"sleep {seconds}")
        kill_all(f"sleep {seconds + 1}")


async def test_a_host_stopped_with_a_pod_acp_connection_open_logs_no_traceback(
    env: dict[str, str], workspace: Path, short_dir: Path
) -> None:
    async with acp_agent(env, "--provider", "scripted") as (conn, _client, _process):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        done = await conn.prompt(
            session_id=session.session_id,
            prompt=[schema.TextContentBlock(type="text", text="hello host")],
        )
        assert done.stop_reason == "end_turn"
        assert len(await asyncio.to_thread(_host_pods, env)) == 1
        stopped = await asyncio.to_thread(pod, env, "host", "stop", timeout=60)
        assert stopped.returncode == 0, stopped.stderr
    log = (short_dir / "pod" / "host.log").read_text(errors="replace")
    assert "Traceback" not in log and "CancelledError" not in log, log
