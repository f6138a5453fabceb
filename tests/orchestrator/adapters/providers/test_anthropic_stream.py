"""Assembling a streamed response with thinking: text and signature deltas, redacted blocks."""

from __future__ import annotations

import json
from typing import Any

import pytest

from orchestrator.adapters.providers.anthropic_stream import IncompleteStreamError, ResponseBuilder
from orchestrator.adapters.providers.base import ThinkingDelta
from orchestrator.core.history import (
    AssistantMessage,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
)
from orchestrator.core.wire import assistant_blocks
from tests.orchestrator.adapters.providers.sdk_events import RawEvents

# What the API sent, block by block, as the next request must carry it back.
ORIGINAL: list[dict[str, Any]] = [
    {"type": "thinking", "thinking": "Read the file first.", "signature": "sig-Abc+/=="},
    {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT"},
    {"type": "thinking", "thinking": "", "signature": "sig-omitted"},
    {"type": "text", "text": "Reading it."},
    {"type": "tool_use", "id": "toolu_01", "name": "read_file", "input": {"path": "a.py"}},
]


def _events() -> list[Any]:
    raw = RawEvents()
    start, delta, stop = raw.start, raw.delta, raw.stop
    start(0, {"type": "thinking", "thinking": "", "signature": ""})
    delta(0, {"type": "thinking_delta", "thinking": "Read the "})
    delta(0, {"type": "thinking_delta", "thinking": "file first."})
    delta(0, {"type": "signature_delta", "signature": "sig-Abc+/=="})
    stop(0)
    start(1, {"type": "redacted_thinking", "data": ORIGINAL[1]["data"]})
    stop(1)
    start(2, {"type": "thinking", "thinking": "", "signature": ""})  # display: omitted
    delta(2, {"type": "signature_delta", "signature": "sig-omitted"})
    stop(2)
    start(3, {"type": "text", "text": ""})
    delta(3, {"type": "text_delta", "text": "Reading it."})
    stop(3)
    start(4, {"type": "tool_use", "id": "toolu_01", "name": "read_file", "input": {}})
    delta(4, {"type": "input_json_delta", "partial_json": json.dumps({"path": "a.py"})})
    stop(4)
    return raw.end("tool_use", {"output_tokens": 42})


def test_thinking_signatures_and_redacted_blocks_are_assembled_in_order() -> None:
    builder = ResponseBuilder()
    emitted = [e for event in _events() for e in builder.feed(event)]
    assert [e.text for e in emitted if isinstance(e, ThinkingDelta)] == ["Read the ", "file first."]
    final = builder.finish()
    assert final.blocks == [
        ThinkingBlock(thinking="Read the file first.", signature="sig-Abc+/=="),
        RedactedThinkingBlock(data=ORIGINAL[1]["data"]),
        ThinkingBlock(thinking="", signature="sig-omitted"),
        TextBlock(text="Reading it."),
        ToolUseBlock(id="toolu_01", name="read_file", input={"path": "a.py"}),
    ]
    assert final.usage.output_tokens == 42  # thinking tokens bill as output


def test_the_wire_view_is_byte_identical_to_what_the_api_sent() -> None:
    builder = ResponseBuilder()
    for event in _events():
        builder.feed(event)
    message = AssistantMessage(blocks=builder.finish().blocks)
    sent = assistant_blocks(message)
    assert json.dumps(sent, sort_keys=True) == json.dumps(ORIGINAL, sort_keys=True)


def test_a_response_cut_mid_thinking_commits_nothing() -> None:
    builder = ResponseBuilder()
    for event in _events()[:4]:  # thinking started, no signature, no message_stop
        builder.feed(event)
    with pytest.raises(IncompleteStreamError, match="message_stop"):
        builder.finish()  # refused whole: no half-signed block reaches the history
