"""Requests for input waiting for a person: the machine's signals, checked answers, withdrawal."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel

from orchestrator.adapters.mcp.elicitations import Elicitations, InputAnswer
from orchestrator.adapters.mcp.forms import FormError
from orchestrator.protocol import ElicitationRequestData

SCHEMA = {
    "type": "object",
    "properties": {"token": {"type": "string"}, "n": {"type": "integer", "minimum": 1}},
    "required": ["token"],
}


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.signals: list[str] = []

    def emit(self, event: str, data: BaseModel) -> None:
        self.events.append((event, data.model_dump(by_alias=True)))

    def signal(self, event: str) -> None:
        self.signals.append(event)


def request(input_id: str, **extra: Any) -> ElicitationRequestData:
    return ElicitationRequestData(
        id=input_id, server="s", message="token?", schema=extra.pop("schema", SCHEMA), **extra
    )


async def test_two_requests_signal_once_each_way_and_take_checked_answers() -> None:
    seen = Recorder()
    asks = Elicitations(emit=seen.emit)
    first = asyncio.ensure_future(asks.ask(request("i1"), signal=seen.signal))
    second = asyncio.ensure_future(asks.ask(request("i2"), signal=seen.signal))
    await asyncio.sleep(0)
    assert seen.signals == ["input_needed"]
    assert [d.id for d in asks.pending()] == ["i1", "i2"]
    assert asks.check("i1", "accept", {"n": 2}) == (
        "the answer does not fit the form: field 'token' is required"
    )
    assert asks.check("i9", "decline", None) == (
        "no request for input 'i9' is waiting (waiting: i1, i2)"
    )
    assert asks.check("i1", "decline", None) is None
    asks.answer("i1", "accept", {"token": "t", "n": 2.0})
    asks.answer("i1", "decline", None)  # a second answer settles nothing
    assert await first == InputAnswer("accept", {"token": "t", "n": 2})
    assert seen.signals == ["input_needed"]  # the second still waits
    asks.answer("i2", "decline", {"token": "ignored"})
    assert await second == InputAnswer("decline", None)
    assert seen.signals == ["input_needed", "input_settled"]
    resolved = [data for event, data in seen.events if event == "elicitation_resolved"]
    assert resolved == [{"id": "i1", "action": "accept"}, {"id": "i2", "action": "decline"}]
    assert not asks.waiting()


async def test_an_interrupt_withdraws_the_request() -> None:
    seen = Recorder()
    asks = Elicitations(emit=seen.emit)
    task = asyncio.ensure_future(asks.ask(request("i1"), signal=seen.signal))
    await asyncio.sleep(0)
    assert asks.waiting_for("i1")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert seen.events[-1] == ("elicitation_resolved", {"id": "i1", "action": "withdrawn"})
    assert seen.signals == ["input_needed", "input_settled"]
    assert asks.pending() == []


async def test_a_form_mcp_does_not_allow_is_refused_before_anyone_is_asked() -> None:
    seen = Recorder()
    asks = Elicitations(emit=seen.emit)
    bad = request("i1", schema={"type": "object", "properties": {"a": {"type": "object"}}})
    with pytest.raises(FormError):
        await asks.ask(bad, signal=seen.signal)
    assert (seen.events, seen.signals) == ([], [])


async def test_a_url_request_takes_no_content() -> None:
    seen = Recorder()
    asks = Elicitations(emit=seen.emit)
    data = request("i1", schema=None, mode="url", url="https://example.com/login")
    task = asyncio.ensure_future(asks.ask(data, signal=seen.signal))
    await asyncio.sleep(0)
    assert asks.check("i1", "accept", None) is None
    asks.answer("i1", "accept", None)
    assert await task == InputAnswer("accept", None)


async def test_an_interrupt_says_every_request_is_over_before_their_waiters_wake() -> None:
    seen = Recorder()
    asks = Elicitations(emit=seen.emit)
    task = asyncio.ensure_future(asks.ask(request("i1"), signal=seen.signal))
    await asyncio.sleep(0)
    asks.withdraw_all()
    # Said at once, before the waiter (an MCP server's task) has run again.
    assert seen.events[-1] == ("elicitation_resolved", {"id": "i1", "action": "withdrawn"})
    assert not asks.waiting_for("i1") and asks.pending() == []
    with pytest.raises(asyncio.CancelledError):
        await task
    resolved = [event for event, _ in seen.events if event == "elicitation_resolved"]
    assert resolved == ["elicitation_resolved"]  # once, not again when the waiter woke
    assert seen.signals == ["input_needed", "input_settled"]
    assert asks.pending() == []
