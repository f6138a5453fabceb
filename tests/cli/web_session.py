"""A session file whose answer searched the web and cites what it found, written as the pod
writes one (its own SessionWriter), for front-ends to replay: a user message, an assistant
message with a web search, its results (one with a hostile title and one with a javascript:
URL) and cited text, and the turn's end."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

import conformance.server
from conformance.fake_api import FakeAnthropic, Reply
from conformance.sse import PlannedReply, SseEvent, plan_reply
from orchestrator.adapters.session.catalog import sessions_dir
from orchestrator.adapters.session.writer import SessionWriter
from orchestrator.core.history import item_from_json

DOCS = "https://docs.python.org/3/library/asyncio.html"
EVIL_URL = "javascript:alert(document.cookie)"
EVIL_TITLE = "\x1b]52;c;ZXZpbA==\x07\x1b]0;PWNED\x07[bold red]Owned[/] " + "A" * 10_000
"""Writes the clipboard and the window title, carries markup, and goes on for 10,000 chars."""

RESULTS = [
    {
        "type": "web_search_result",
        "url": DOCS,
        "title": "asyncio — Asynchronous I/O",
        "encrypted_content": "enc-1",
    },
    {
        "type": "web_search_result",
        "url": EVIL_URL,
        "title": EVIL_TITLE,
        "encrypted_content": "enc-2",
    },
]
CITATIONS = [
    {
        "type": "web_search_result_location",
        "url": DOCS,
        "title": "asyncio — Asynchronous I/O",
        "cited_text": "asyncio is a library",
        "encrypted_index": "ix-1",
    },
    {
        "type": "web_search_result_location",
        "url": EVIL_URL,
        "title": EVIL_TITLE,
        "cited_text": "x",
        "encrypted_index": "ix-2",
    },
]
BLOCKS: list[dict[str, Any]] = [
    {"type": "text", "text": "Let me search. "},
    {
        "type": "server_tool_use",
        "id": "srvtoolu_01A",
        "name": "web_search",
        "input": {"query": "python asyncio"},
    },
    {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01A", "content": RESULTS},
    {"type": "text", "text": "Per the docs, "},
    {"type": "text", "text": "asyncio writes concurrent code", "citations": CITATIONS},
    {"type": "text", "text": "."},
]


def write_web_session(workspace: Path, name: str = "web-answer") -> Path:
    """The session file in ``workspace``'s sessions folder (under ``$XDG_STATE_HOME``)."""
    path = sessions_dir(workspace) / f"{name}.jsonl"
    writer = SessionWriter(path, pod="web", workspace=workspace)
    try:
        user = {
            "kind": "user_message",
            "seq": 1,
            "turn": 1,
            "segments": [{"kind": "text", "text": "what is asyncio?"}],
            "text": "what is asyncio?",
        }
        answer = {
            "kind": "assistant",
            "seq": 2,
            "turn": 1,
            "blocks": BLOCKS,
            "stop_reason": "end_turn",
            "synthetic": False,
        }
        for raw in (user, answer):
            writer.append_item(item_from_json(raw))
        writer.turn_end(1, "finished")
    finally:
        writer.close()
    return path


_blocks = PlannedReply._block_events


def _web_block_events(self: PlannedReply, index: int, block: dict[str, Any]) -> list[SseEvent]:
    """The SSE of a server tool call, its result and a cited text block, as the API sends."""

    def event(kind: str, **data: Any) -> SseEvent:
        return SseEvent(kind, {"type": kind, "index": index, **data})

    kind = block["type"]
    if kind == "server_tool_use":
        arguments = json.dumps(block["input"])
        return [
            event("content_block_start", content_block={**block, "input": {}}),
            event(
                "content_block_delta", delta={"type": "input_json_delta", "partial_json": arguments}
            ),
            event("content_block_stop"),
        ]
    if kind == "web_search_tool_result":
        return [event("content_block_start", content_block=block), event("content_block_stop")]
    if kind == "text" and block.get("citations"):
        out = [event("content_block_start", content_block={"type": "text", "text": ""})]
        out += [
            event("content_block_delta", delta={"type": "citations_delta", "citation": c})
            for c in block["citations"]
        ]
        out.append(
            event("content_block_delta", delta={"type": "text_delta", "text": block["text"]})
        )
        return [*out, event("content_block_stop")]
    return _blocks(self, index, block)


def web_search_api(monkeypatch: pytest.MonkeyPatch) -> FakeAnthropic:
    """The fake Messages API, its first reply being :data:`BLOCKS`, streamed as the API
    streams server tool blocks and cited text (the fake does not send them of its own yet)."""
    plan = plan_reply  # the one conformance.server calls

    def planned_with_a_search(reply: Reply, **kwargs: Any) -> PlannedReply:
        return dataclasses.replace(plan(reply, **kwargs), blocks=BLOCKS)

    monkeypatch.setattr(conformance.server, "plan_reply", planned_with_a_search)
    monkeypatch.setattr(PlannedReply, "_block_events", _web_block_events)
    return FakeAnthropic([Reply(text="replaced by the blocks above")])
