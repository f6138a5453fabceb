"""The turn loop and the API's own tools: continuations, calls closed at commit, replies
that break the pairing fixed before they are stored."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from orchestrator.adapters.providers.base import ProviderRequest, ResponseComplete, StreamEvent
from orchestrator.adapters.providers.scripted import ScriptedReply
from orchestrator.adapters.providers.scripted_web import ScriptedServerCall
from orchestrator.core.history import (
    AssistantMessage,
    Block,
    ServerToolResultBlock,
    ServerToolUseBlock,
    TextBlock,
    ToolUseBlock,
    UserMessage,
)
from orchestrator.core.validator import validate_wire
from orchestrator.core.wire import to_wire
from tests.orchestrator.runtime.test_turn import _started, _turn

OPEN = ScriptedServerCall(id="srvtoolu_1", input={"query": "q"}, result="none")


async def test_a_resumed_turn_ending_in_pause_turn_sends_the_continuation(
    workspace: Path,
) -> None:
    host = _started()
    host.commit(
        AssistantMessage(
            blocks=[ServerToolUseBlock(id="srvtoolu_1", name="web_search", input={})],
            stop_reason="pause_turn",
        )
    )
    turn = _turn(host, workspace, [ScriptedReply(text="found")])
    assert await turn.run() == "finished"
    [request] = turn.provider.requests  # type: ignore[attr-defined]
    assert request.messages[-1]["role"] == "assistant"
    last = host.history.items[-1]
    assert isinstance(last, AssistantMessage)
    assert isinstance(last.blocks[0], ServerToolResultBlock)  # the API ran the paused call


async def test_a_reply_that_ends_with_a_call_open_is_closed_at_once(workspace: Path) -> None:
    host = _started()
    reply = ScriptedReply(text="stopped early", server_calls=[OPEN])  # end_turn, call open
    assert await _turn(host, workspace, [reply]).run() == "finished"
    closing = host.history.items[-1]
    assert isinstance(closing, AssistantMessage) and closing.synthetic
    assert validate_wire(to_wire([*host.history.items, UserMessage(text="next")])) == []


class Canned:
    """A provider that answers with fixed blocks, as a misbehaving API or proxy might."""

    def __init__(self, replies: list[tuple[list[Block], str]]) -> None:
        self.replies = replies
        self.requests: list[ProviderRequest] = []

    async def stream(self, request: ProviderRequest) -> AsyncIterator[StreamEvent]:
        self.requests.append(request)
        blocks, stop = self.replies.pop(0)
        yield ResponseComplete(blocks=blocks, stop_reason=stop)


async def test_a_mixed_message_whose_result_never_comes_is_closed_at_the_opening(
    workspace: Path,
) -> None:
    host = _started()
    turn = _turn(host, workspace, [])
    mixed: list[Block] = [
        ServerToolUseBlock(id="srvtoolu_1", name="web_search", input={"query": "q"}),
        ToolUseBlock(id="toolu_1", name="read_file", input={"path": "README.md"}),
    ]
    canned = Canned([(mixed, "tool_use"), ([TextBlock(text="no search result")], "end_turn")])
    turn.provider = canned  # type: ignore[assignment]
    (workspace / "README.md").write_text("hi\n")
    assert await turn.run() == "finished"
    answer = host.history.items[-1]
    assert isinstance(answer, AssistantMessage)
    first = answer.blocks[0]
    assert isinstance(first, ServerToolResultBlock) and first.tool_use_id == "srvtoolu_1"
    assert any("closed as unavailable" in alert for alert in host.alerts)
    for request in canned.requests:
        assert validate_wire(request.messages) == []
    after: list[Any] = [*host.history.items, UserMessage(text="next")]
    assert validate_wire(to_wire(after)) == []
