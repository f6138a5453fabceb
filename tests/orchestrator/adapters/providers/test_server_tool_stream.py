"""Server tool blocks and citations: assembled from the stream, stored, and sent back exactly.

The API's web search and web fetch run on its side; their blocks carry encrypted fields the
next request must carry back byte for byte. These tests feed the SDK's own event models (what
the SDK parses off the wire) and compare the wire form of the committed message with what the
API sent, after a trip through the session file's JSON.
"""

from __future__ import annotations

import json
from typing import Any

from anthropic.types import (
    Message,
)

from orchestrator.adapters.providers.anthropic_stream import ResponseBuilder
from orchestrator.adapters.providers.base import (
    CitationDelta,
    ServerToolCall,
    ServerToolResult,
    ToolCallArgsDelta,
    ToolCallStart,
)
from orchestrator.core.history import AssistantMessage, item_from_json, item_to_json
from orchestrator.core.server_tools import cited_source, summarize_result
from orchestrator.core.wire import assistant_blocks
from tests.orchestrator.adapters.providers.sdk_events import RawEvents

SEARCH_RESULT: dict[str, Any] = {
    "type": "web_search_tool_result",
    "tool_use_id": "srvtoolu_01A",
    "content": [
        {
            "type": "web_search_result",
            "url": "https://docs.python.org/3/library/asyncio.html",
            "title": "asyncio — Asynchronous I/O",
            "encrypted_content": "EqgfCioIARgBIiQ3YTAwMjY1Mi1mZjM5LTQ1NGUtODgxNC1kNjNjNTk1ZWI3Y",
            "page_age": "April 30, 2025",
        }
    ],
}
CITATION: dict[str, Any] = {
    "type": "web_search_result_location",
    "url": "https://docs.python.org/3/library/asyncio.html",
    "title": "asyncio — Asynchronous I/O",
    "encrypted_index": "Eo8BCioIAhgBIiQyYjQ0OWJmZi1lNm+/==",
    "cited_text": "asyncio is a library to write concurrent code",
}
FETCH_ERROR: dict[str, Any] = {
    "type": "web_fetch_tool_result",
    "tool_use_id": "srvtoolu_01B",
    "content": {"type": "web_fetch_tool_result_error", "error_code": "url_not_accessible"},
}

# What the API sent, as the next request must carry it back.
ORIGINAL: list[dict[str, Any]] = [
    {"type": "text", "text": "Let me search."},
    {
        "type": "server_tool_use",
        "id": "srvtoolu_01A",
        "name": "web_search",
        "input": {"query": "python asyncio"},
    },
    SEARCH_RESULT,
    {"type": "text", "text": "asyncio writes concurrent code.", "citations": [CITATION]},
    {
        "type": "server_tool_use",
        "id": "srvtoolu_01B",
        "name": "web_fetch",
        "input": {"url": "https://example.com/x"},
    },
    FETCH_ERROR,
]


def _stream_events() -> list[Any]:
    raw = RawEvents()
    start, delta, stop = raw.start, raw.delta, raw.stop
    start(0, {"type": "text", "text": ""})
    delta(0, {"type": "text_delta", "text": "Let me search."})
    stop(0)
    start(1, {**ORIGINAL[1], "input": {}})
    delta(1, {"type": "input_json_delta", "partial_json": '{"query": "py'})
    delta(1, {"type": "input_json_delta", "partial_json": 'thon asyncio"}'})
    stop(1)
    start(2, SEARCH_RESULT)
    stop(2)
    start(3, {"type": "text", "text": "", "citations": None})
    delta(3, {"type": "citations_delta", "citation": CITATION})
    delta(3, {"type": "text_delta", "text": "asyncio writes concurrent code."})
    stop(3)
    start(4, {**ORIGINAL[4], "input": {}})
    delta(4, {"type": "input_json_delta", "partial_json": json.dumps(ORIGINAL[4]["input"])})
    stop(4)
    start(5, FETCH_ERROR)
    stop(5)
    usage = {
        "output_tokens": 40,
        "server_tool_use": {"web_search_requests": 1, "web_fetch_requests": 1},
    }
    return raw.end("end_turn", usage)


def _stored_and_back(builder: ResponseBuilder) -> list[dict[str, Any]]:
    """The wire blocks of the committed message after a trip through the session JSON."""
    response = builder.finish()
    message = AssistantMessage(blocks=response.blocks, stop_reason=response.stop_reason)
    line = json.dumps(item_to_json(message), ensure_ascii=False)
    loaded = item_from_json(line)
    assert isinstance(loaded, AssistantMessage)
    return assistant_blocks(loaded)


def test_streamed_server_blocks_come_back_byte_for_byte() -> None:
    builder = ResponseBuilder()
    events = [ours for raw in _stream_events() for ours in builder.feed(raw)]

    assert _stored_and_back(builder) == ORIGINAL
    # Exactly equal JSON text, encrypted fields included, not merely equal values.
    assert json.dumps(_stored_and_back(builder), sort_keys=True) == json.dumps(
        ORIGINAL, sort_keys=True
    )
    usage = builder.finish().usage
    assert (usage.web_search_requests, usage.web_fetch_requests) == (1, 1)

    # A server call is never announced as a client tool call (nobody must run or answer it).
    assert not [e for e in events if isinstance(e, (ToolCallStart, ToolCallArgsDelta))]
    calls = [e for e in events if isinstance(e, ServerToolCall)]
    assert [(c.id, c.name, c.input) for c in calls] == [
        ("srvtoolu_01A", "web_search", {"query": "python asyncio"}),
        ("srvtoolu_01B", "web_fetch", {"url": "https://example.com/x"}),
    ]
    results = [e.block for e in events if isinstance(e, ServerToolResult)]
    assert [r.tool_use_id for r in results] == ["srvtoolu_01A", "srvtoolu_01B"]
    citations = [e.citation for e in events if isinstance(e, CitationDelta)]
    assert citations == [CITATION]


def test_a_whole_message_body_keeps_the_same_blocks() -> None:
    """A server that answers a streaming request with one JSON body gives the same history."""
    message = Message.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "m",
            "content": ORIGINAL,
            "stop_reason": "pause_turn",
            "usage": {
                "input_tokens": 10,
                "output_tokens": 3,
                "server_tool_use": {"web_search_requests": 1, "web_fetch_requests": 1},
            },
        }
    )
    builder = ResponseBuilder()
    events = builder.whole(message)
    assert _stored_and_back(builder) == ORIGINAL
    assert builder.finish().stop_reason == "pause_turn"
    assert [e.id for e in events if isinstance(e, ServerToolCall)] == [
        "srvtoolu_01A",
        "srvtoolu_01B",
    ]


def test_people_see_sources_error_codes_and_cited_urls() -> None:
    builder = ResponseBuilder()
    for raw in _stream_events():
        builder.feed(raw)
    results = [b for b in builder.finish().blocks if getattr(b, "tool_use_id", None)]
    search, fetch = (summarize_result(b) for b in results)  # type: ignore[arg-type]
    assert search.name == "web_search" and search.error_code is None
    assert [(s.url, s.title) for s in search.sources] == [
        ("https://docs.python.org/3/library/asyncio.html", "asyncio — Asynchronous I/O")
    ]
    assert (fetch.name, fetch.sources, fetch.error_code) == ("web_fetch", [], "url_not_accessible")
    cited = cited_source(CITATION)
    assert cited.url == CITATION["url"] and cited.cited_text.startswith("asyncio is")
