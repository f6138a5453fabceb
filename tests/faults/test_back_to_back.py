"""Methods that arrive in one write: the machine must always learn how the turn ended.

A ``run`` starts the turn task; a ``pause``/``cancel``/``shutdown`` read from the same chunk
cancels that task before it ever ran. The pod must still leave the transitional state.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from orchestrator.serving.client import PodClient
from tests.e2e.harness import ScriptedReply, ScriptedToolCall, collect_until, running_pod

SLOW = ScriptedReply(text="y" * 200, chunk_size=4, chunk_delay_s=0.01)


def _line(method: str, **params: object) -> bytes:
    return json.dumps({"method": method, "params": params}).encode() + b"\n"


@pytest.mark.parametrize(
    ("second", "expected_status", "expected_run_end"),
    [
        ("pause", "paused", "paused"),
        ("cancel", "idle", "cancelled"),
    ],
)
async def test_run_then_interrupt_in_one_write(
    workspace: Path, short_dir: Path, second: str, expected_status: str, expected_run_end: str
) -> None:
    async with running_pod(workspace, short_dir, replies=[SLOW, SLOW]) as pod:
        c = await pod.client()
        await c.send_raw(_line("run", input="a") + _line(second))
        events = await collect_until(c, "run_end", timeout=5)
        assert events[-1].data["result"] == expected_run_end
        status = await c.request("get_status")
        assert status.data["status"] == expected_status
        # The pod still works: a new turn runs to the end.
        await c.send("run", {"input": "again"})
        events = await collect_until(c, "run_end", timeout=5)
        assert events[-1].data["result"] == "finished"
        pod.assert_all_requests_valid()
        await c.close()


async def test_run_then_shutdown_in_one_write(workspace: Path, short_dir: Path) -> None:
    async with running_pod(workspace, short_dir, replies=[SLOW]) as pod:
        c = await pod.client()
        await c.send_raw(_line("run", input="a") + _line("shutdown"))
        await collect_until(c, "shutdown", timeout=5)
        await asyncio.wait_for(pod.task, 5)
        await c.close()


async def test_resume_then_pause_in_one_write(workspace: Path, short_dir: Path) -> None:
    async with running_pod(workspace, short_dir, replies=[SLOW, SLOW, SLOW]) as pod:
        c = await pod.client()
        await c.send("run", {"input": "a"})
        await c.wait_for("text_delta")
        await c.send("pause")
        await c.wait_for("run_end", result="paused")
        await c.send_raw(_line("resume") + _line("pause"))
        events = await collect_until(c, "run_end", timeout=5)
        assert events[-1].data["result"] == "paused"
        await c.send("resume")
        events = await collect_until(c, "run_end", timeout=5)
        assert events[-1].data["result"] == "finished"
        pod.assert_all_requests_valid()
        await c.close()


async def test_notify_then_cancel_in_one_write(workspace: Path, short_dir: Path) -> None:
    async with running_pod(workspace, short_dir, replies=[SLOW, SLOW]) as pod:
        c = await pod.client()
        await c.send_raw(_line("notify", message="build done") + _line("cancel"))
        events = await collect_until(c, "run_end", timeout=5)
        assert events[-1].data["result"] == "cancelled"
        assert (await c.request("get_status")).data["status"] == "idle"
        await c.close()


async def test_run_with_tools_then_pause_and_resume_in_one_write(
    workspace: Path, short_dir: Path
) -> None:
    tool = ScriptedReply(
        tool_calls=[ScriptedToolCall(name="read_file", input={"path": "README.md"})]
    )
    async with running_pod(workspace, short_dir, replies=[tool, SLOW]) as pod:
        c = await pod.client()
        await c.send_raw(_line("run", input="a") + _line("pause") + _line("resume"))
        events = await collect_until(c, "run_end", timeout=5)
        # The resume was read while the pod was still pausing: refused, not lost in a lock-up.
        errors = [e.data["code"] for e in events if e.event == "error"]
        assert errors == ["not_paused"]
        assert events[-1].data["result"] == "paused"
        await c.send("resume")
        events = await collect_until(c, "run_end", timeout=5)
        assert events[-1].data["result"] == "finished"
        pod.assert_all_requests_valid()
        await c.close()


async def test_four_clients_with_random_gaps_never_lock_the_pod(
    workspace: Path, short_dir: Path
) -> None:
    import random

    rng = random.Random(4)
    tool = ScriptedReply(
        tool_calls=[ScriptedToolCall(name="read_file", input={"path": "README.md"})]
    )
    async with running_pod(workspace, short_dir, replies=[SLOW, tool] * 200) as pod:
        clients = [await pod.client() for _ in range(4)]

        async def hammer(c: PodClient, seed: int) -> None:
            local = random.Random(seed)
            for _ in range(40):
                method = local.choice(["run", "pause", "resume", "cancel", "notify"])
                params = {"run": {"input": "go"}, "notify": {"message": "n"}}.get(method, {})
                await c.send(method, params)
                await asyncio.sleep(local.uniform(0, 0.05))

        await asyncio.gather(*(hammer(c, rng.randrange(2**32)) for c in clients))
        # However the methods interleaved, the pod settles and still answers a new turn.
        watcher = await pod.client()
        for _ in range(200):
            state = (await watcher.request("get_status")).data["state"]
            if state not in ("pausing", "cancelling", "stopping"):
                break
            await asyncio.sleep(0.05)
        assert state not in ("pausing", "cancelling", "stopping")
        if state in ("requesting", "executing_tools"):
            await watcher.send("cancel")
            await watcher.wait_for("run_end", timeout=10)
        await watcher.send("run", {"input": "final"})
        events = await collect_until(watcher, "run_end", timeout=10)
        assert events[-1].data["result"] in ("finished", "limit_reached")
        pod.assert_all_requests_valid()
        for c in [*clients, watcher]:
            await c.close()
