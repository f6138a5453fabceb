"""A stdio MCP server's ``setsid`` child leaves the server's process group, yet it ends with
the server and with the pod (kill -9 included); one that outlives a killed supervisor is
reported by ``pod mcp ls``."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from orchestrator.adapters.procs.supervisor import proc_stat
from orchestrator.serving.client import PodClient
from tests.cli.helpers import pod
from tests.e2e.harness import (
    RunningPod,
    ScriptedReply,
    ScriptedToolCall,
    collect_until,
    running_pod,
    start_pod_process,
)
from tests.mcp.detaching_server import config
from tests.processes import gone, kill_all, unique_seconds, wait_recorded, wait_running


@pytest.fixture
def seconds() -> Iterator[int]:
    value = unique_seconds()
    yield value
    kill_all(f"sleep {value}")


def _detach(seconds: int) -> list[ScriptedReply]:
    call = ScriptedToolCall(name="mcp__d__detach", input={"seconds": seconds})
    return [ScriptedReply(tool_calls=[call]), ScriptedReply(text="detached")]


@contextlib.asynccontextmanager
async def _pod_whose_server_detached(
    workspace: Path, short_dir: Path, seconds: int
) -> AsyncIterator[tuple[RunningPod, PodClient, int]]:
    """A pod whose MCP server has started `setsid sleep SECONDS`; yields the child's pid."""
    async with running_pod(
        workspace, short_dir, replies=_detach(seconds), mcp={"servers": {"d": config()}}
    ) as served:
        c = await served.client()
        await c.send("run", {"input": "detach"})
        await collect_until(c, "run_end", timeout=30)
        [child] = wait_running(f"sleep {seconds}", 1)
        yield served, c, child


async def test_a_setsid_child_ends_when_the_pod_stops(
    workspace: Path, short_dir: Path, seconds: int
) -> None:
    async with _pod_whose_server_detached(workspace, short_dir, seconds) as (_, c, _child):
        await c.close()
    assert gone(f"sleep {seconds}"), "the server's setsid child outlived the pod"


async def test_a_setsid_child_ends_when_the_pod_is_killed(
    workspace: Path, short_dir: Path, seconds: int
) -> None:
    user_config = Path(os.environ["XDG_CONFIG_HOME"]) / "pod" / "config.toml"
    user_config.parent.mkdir(parents=True, exist_ok=True)
    server = config()
    user_config.write_text(
        f"[mcp.servers.d]\ncommand = {json.dumps(server['command'])}\n"
        f"args = {json.dumps(server['args'])}\ncwd = {json.dumps(server['cwd'])}\n"
        'permission = "allow"\n'
    )
    script = short_dir / "script.json"
    detach = {"name": "mcp__d__detach", "input": {"seconds": seconds}}
    script.write_text(json.dumps({"replies": [{"tool_calls": [detach]}, {"text": "detached"}]}))
    proc = start_pod_process(workspace, short_dir / "p.sock", short_dir / "s.jsonl", script)
    try:
        c = await PodClient.connect(short_dir / "p.sock")
        await c.send("run", {"input": "detach"})
        await collect_until(c, "run_end", timeout=30)
        wait_running(f"sleep {seconds}", 1)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(20)
        await c.close()
        assert gone(f"sleep {seconds}"), "the server's setsid child outlived a kill -9 of the pod"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


async def test_a_survivor_of_a_killed_supervisor_is_reported(
    workspace: Path, short_dir: Path, seconds: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # From the supervisor's record: a cgroup would be swept by any pod that starts meanwhile
    # in a parallel test (as it should), and the survivor be gone before it is reported.
    monkeypatch.setenv("POD_PROCS_CGROUP", "0")
    async with _pod_whose_server_detached(workspace, short_dir, seconds) as (served, c, child):
        server = _parent(child)
        supervisor = _parent(server)
        await asyncio.to_thread(wait_recorded, supervisor, {child})
        # A kill -9 of the server's whole process group: the supervisor has no chance to
        # end the child, which is in a session of its own.
        os.killpg(supervisor, signal.SIGKILL)
        await c.wait_for("alert", timeout=10)
        [row] = (await c.request("get_status")).data["mcp"]
        assert row["survivors"] == [f"{child} sleep {seconds}"]
        # The CLI in a thread: the pod it asks runs on this test's event loop.
        env = dict(os.environ)
        shown = await asyncio.to_thread(pod, env, "mcp", "ls", "--socket", str(served.socket))
        assert f"  left running, unsupervised: {child} sleep {seconds}" in shown.stdout
        listed: Any = json.loads(
            (
                await asyncio.to_thread(
                    pod, env, "mcp", "ls", "--json", "--socket", str(served.socket)
                )
            ).stdout
        )
        assert listed["servers"][0]["survivors"] == [f"{child} sleep {seconds}"]
        status = await asyncio.to_thread(pod, env, "status", "--socket", str(served.socket))
        assert "1 process(es) left running unsupervised" in " ".join(status.stdout.split())
        await c.close()


def _parent(pid: int) -> int:
    stat = proc_stat(pid)
    assert stat is not None
    return stat[1]
