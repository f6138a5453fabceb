"""A paused ``task`` call waits for its child to pause, however often it is cancelled."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from orchestrator.capabilities.subpods.children import Children
from orchestrator.capabilities.subpods.parent import ParentLinks
from orchestrator.capabilities.subpods.spec import ChildRequest
from orchestrator.capabilities.tools.base import PartialOutput
from orchestrator.config.model import PodConfig


class SlowPausingChild:
    """A child that runs until paused, and takes a while to say it paused."""

    def __init__(self) -> None:
        self.alive = True
        self.paused = False
        self.running = asyncio.Event()
        self.on_text: Any = None
        self.on_approval: Any = None

    async def run_to_end(self, prompt: str) -> str:
        self.running.set()
        await asyncio.Event().wait()
        return "finished"

    async def pause(self) -> None:
        await asyncio.sleep(0.3)
        self.paused = True

    def drop_relays(self) -> None:
        """Nothing relayed here."""

    async def set_budget(self, budget_usd: float | None) -> None:
        """No budget here."""

    def uncounted_usd(self) -> float:
        """Nothing spent here."""
        return 0.0

    def flush_output(self) -> None:
        """Nothing printed here."""


async def test_a_cancelled_call_returns_only_once_its_child_paused(tmp_path: Path) -> None:
    children = Children(
        config=PodConfig(workspace=tmp_path, name="t"),
        session_path=tmp_path / "s.jsonl",
        records={},
    )

    async def record(_: object) -> None:
        pass

    children.links = ParentLinks(
        record=record,
        emit=lambda name, data: None,
        alert=lambda level, source, text: None,
        approvals=None,  # type: ignore[arg-type]  # never asked here
        elicitations=None,  # type: ignore[arg-type]
        signal=lambda event: None,
        offered=lambda: [],
    )
    child = SlowPausingChild()
    children.live["call-1"] = child  # type: ignore[assignment]
    call = asyncio.ensure_future(
        children.run("call-1", ChildRequest(prompt="p", name="n"), PartialOutput())
    )
    await asyncio.wait_for(child.running.wait(), 5)
    # The tool runner's gather cancels the call, then the runner cancels it again.
    call.cancel()
    await asyncio.sleep(0)
    call.cancel()
    done, _ = await asyncio.wait({call}, timeout=5)
    assert done and call.cancelled()
    assert child.paused, "the call ended before its child said it paused"


class RecordingClient:
    """A child's connection that records what its parent sends, and answers a cancel."""

    def __init__(self, child: Any) -> None:
        self.child = child
        self.sent: list[str] = []

    async def send(self, method: str, params: Any = None) -> None:
        self.sent.append(method)
        if method == "cancel":
            self.child._set(status="idle", state="idle")


async def test_a_paused_child_is_not_sent_the_cancel_a_paused_pod_refuses(tmp_path: Path) -> None:
    from orchestrator.adapters.session import ChildRecord
    from orchestrator.capabilities.subpods.child import PAUSE_WAIT_S, Child

    record = ChildRecord(
        call_id="c", name="t.n-1", session=str(tmp_path / "c.jsonl"), workspace=".", started_ms=0
    )
    child = Child(record, socket=tmp_path / "c.sock", log_path=tmp_path / "c.log",
                  on_change=lambda c: None)  # fmt: skip
    client = RecordingClient(child)
    child.client = client  # type: ignore[assignment]
    child.status = "paused"
    started = asyncio.get_running_loop().time()
    await child.cancel()
    # Refused there, the cancel would have waited PAUSE_WAIT_S for a change that never comes.
    assert client.sent == []
    assert asyncio.get_running_loop().time() - started < PAUSE_WAIT_S / 2
    child.status = "running"
    await asyncio.wait_for(child.cancel(), PAUSE_WAIT_S / 2)
    assert client.sent == ["cancel"] and child.status == "idle"
