"""How the fake answers a request that declares server tools, and the server-tools profile.

:func:`read_web_request` reads what the answer depends on: the server tools declared, whether
the request continues a paused server loop (its last message is the assistant content a
``pause_turn`` ended), the server calls the latest assistant content left without a result
(the next response opens with their results), and the thinking of the content it continues.

Under the **server-tools profile** (``FakeAnthropic(server_tools_profile=True)``) every reply
to a request declaring ``web_search`` searches: a request that does not continue a server loop
is first answered, without using a script step, by a search that ends in ``pause_turn``
(:data:`PROFILE_PAUSE`); the continuation then gets the scripted step with a search of its own
and text citing it (:func:`with_searches`), and a reply that also calls client tools leaves
one more search without its result (the mixed case), which opens the next response.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from conformance.script import Drop, Reply, ServerCall, Step, StreamError
from conformance.validation import is_continuation
from conformance.web import declared_server_tools, unresolved_calls
from orchestrator.core.validator import merge_same_role

__all__ = [
    "PROFILE_PAUSE",
    "WebRequest",
    "read_web_request",
    "server_blocks_sent_back",
    "with_searches",
]

PROFILE_PAUSE = Reply(
    server_calls=(ServerCall(input={"query": "what the user asked about"}),),
    stop_reason="pause_turn",
)
"""The profile's first answer to a request that does not continue a server loop."""

_THINKING = ("thinking", "redacted_thinking")


@dataclass(slots=True)
class WebRequest:
    """What a Messages request means for the server tools."""

    declared: dict[str, dict[str, Any]] = field(default_factory=dict)
    continuation: bool = False
    """The last message is paused assistant content: the response continues it."""
    unresolved: list[dict[str, Any]] = field(default_factory=list)
    prior_thinking: list[dict[str, Any]] = field(default_factory=list)
    """The thinking of the content a continuation continues: the thinking its response is
    matched against when sent back (the continuation itself does not think again)."""


def read_web_request(body: dict[str, Any]) -> WebRequest:
    """Read a valid request (see the module docstring)."""
    merged = merge_same_role(body.get("messages") or [])
    continuation = is_continuation(merged)
    prior = merged[-1]["content"] if continuation else []
    return WebRequest(
        declared=declared_server_tools(body),
        continuation=continuation,
        unresolved=unresolved_calls(merged),
        prior_thinking=[dict(b) for b in prior if b.get("type") in _THINKING],
    )


def _searching(reply: Reply) -> Reply:
    calls = [ServerCall(input={"query": "a detail to check"})]
    if reply.tool_calls:
        calls.append(ServerCall(input={"query": "while the tools run"}, pending=True))
    return replace(reply, server_calls=(*reply.server_calls, *calls), cite=True)


def with_searches(step: Step) -> Step:
    """``step`` as the profile answers a continuation: its reply searches and cites."""
    if isinstance(step, Reply):
        return _searching(step)
    if isinstance(step, Drop | StreamError):
        return replace(step, reply=_searching(step.reply))
    return step


_SERVER_BLOCKS = ("server_tool_use", "web_search_tool_result", "web_fetch_tool_result")


def server_blocks_sent_back(body: object) -> int:
    """How many server tool blocks (calls and results) a request body carries back in its
    assistant messages (0 for a body that is not a Messages request)."""
    messages = body.get("messages") if isinstance(body, dict) else None
    count = 0
    for message in messages if isinstance(messages, list) else []:
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") in _SERVER_BLOCKS:
                count += 1
    return count
