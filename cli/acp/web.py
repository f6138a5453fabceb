"""The API's web search and web fetch, and the answer's citations, as ACP updates.

A server tool call is an ACP tool call of kind ``search`` (web search) or ``fetch`` (web
fetch) titled with its query or URL, ``in_progress`` as it starts; its result makes it
``completed`` with a ``resource_link`` per page found (what editors show as a link), or
``failed`` with the error code in words. The pod runs nothing and asks nothing for these.

Citations: from a message's first citation on, its text is sent from the committed blocks,
each followed by its ``[n]`` markers (:mod:`cli.cited_stream`); after the message come its
sources, ``[n]`` and a ``resource_link`` each. Only an ``http``/``https`` URL becomes a link;
titles and queries are cleaned (:mod:`cli.web_text`) and, where they sit in message text an
editor renders as Markdown, their Markdown is escaped, so a title cannot make a link.
Pure: the agent sends what these return.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from acp import schema

from cli.acp.chunks import SessionUpdate, message_chunk, thought_chunk
from cli.cited_stream import CitedStream
from cli.web_text import ShownSource, call_text, clean, error_text, plain_markdown, result_text
from orchestrator.core.history import (
    OMITTED_THINKING,
    REDACTED_THINKING,
    Block,
    RedactedThinkingBlock,
    ServerToolResultBlock,
    ServerToolUseBlock,
    TextBlock,
    ThinkingBlock,
)
from orchestrator.core.server_tools import summarize_result

__all__ = ["ANSWER_EVENTS", "answer_updates", "block_updates", "server_call", "server_result"]

ANSWER_EVENTS = frozenset(
    {"text_delta", "text_done", "citation", "server_tool_call", "server_tool_result"}
)
"""The events :func:`answer_updates` deals with in full."""

KINDS: dict[str, Any] = {"web_search": "search", "web_fetch": "fetch"}


def _text(text: str) -> schema.ContentToolCallContent:
    return schema.ContentToolCallContent(
        type="content", content=schema.TextContentBlock(type="text", text=text)
    )


def _link(source: ShownSource) -> schema.ResourceContentBlock | None:
    if source.link is None:
        return None
    return schema.ResourceContentBlock(
        type="resource_link", uri=source.link, name=source.title, title=source.title
    )


def server_call(call_id: str, name: str, tool_input: dict[str, Any]) -> schema.ToolCallStart:
    """The ``tool_call`` of a server tool call as it starts: its query or URL as title."""
    asked = {k: clean(v, 2000) for k, v in tool_input.items() if k in ("query", "url")}
    return schema.ToolCallStart(
        session_update="tool_call",
        tool_call_id=call_id,
        title=call_text(name, tool_input),
        kind=KINDS.get(name, "other"),
        status="in_progress",
        raw_input=asked,
    )


def server_result(
    call_id: str, name: str, sources: Sequence[tuple[object, object]], error_code: str | None
) -> schema.ToolCallProgress:
    """The call's result: the pages as links (completed), or the error in words (failed)."""
    parts: list[Any] = [_text(result_text(name, sources, error_code))]
    if error_code:
        parts = [_text(error_text(name, error_code))]
    for url, title in sources:
        source = ShownSource.of(url, title)
        link = _link(source)
        parts.append(
            schema.ContentToolCallContent(type="content", content=link)
            if link is not None
            else _text(source.line())
        )
    return schema.ToolCallProgress(
        session_update="tool_call_update",
        tool_call_id=call_id,
        status="failed" if error_code else "completed",
        content=parts,
        raw_output={"sources": len(sources), "error_code": error_code},
    )


def source_updates(sources: list[ShownSource]) -> list[schema.AgentMessageChunk]:
    """A message's sources after it: ``[n]`` and a link each (a URL that is no web link is
    named as text, and said to be none)."""
    if not sources:
        return []
    updates = [message_chunk("\n\nSources:")]
    for number, source in enumerate(sources, start=1):
        link = _link(source)
        if link is None:
            named = f"{plain_markdown(source.title)} — {plain_markdown(source.url)}"
            updates.append(message_chunk(f"\n[{number}] {named} (not a web link)"))
            continue
        updates.append(message_chunk(f"\n[{number}] "))
        updates.append(schema.AgentMessageChunk(session_update="agent_message_chunk", content=link))
    return updates


def answer_updates(cited: CitedStream, name: str, data: dict[str, Any]) -> list[SessionUpdate]:
    """The updates one pod event makes of the answer and the web calls; a citing message's
    sources are sent before the first event after its commit (``run_end`` included)."""
    updates: list[SessionUpdate] = []
    if cited.ends_message(name, data):
        updates += source_updates(cited.sources())
    if name == "text_delta":
        text = cited.delta(str(data["text"]), escape=False)
        updates += [message_chunk(text)] if text else []
    elif name == "citation":
        cited.citation()
    elif name == "text_done" and (cited.citing or data.get("citations")):
        text = cited.done(
            str(data["text"]), data.get("citations"), escape=False, seq=data.get("seq")
        )
        updates += [message_chunk(text)] if text else []
    elif name == "server_tool_call":
        updates.append(server_call(str(data["id"]), str(data["name"]), data.get("input") or {}))
    elif name == "server_tool_result":
        sources = [(s.get("url"), s.get("title")) for s in data.get("sources") or []]
        updates.append(
            server_result(str(data["id"]), str(data["name"]), sources, data.get("error_code"))
        )
    elif name in ("run_end", "shutdown") and cited.holding:
        # Held text the pod never committed: the editor sees what streamed, as it used to.
        unkept = cited.unkept(escape=False)
        cited.sources()
        updates += [message_chunk(unkept)] if unkept else []
    return updates


def block_updates(blocks: Iterable[Block]) -> list[SessionUpdate]:
    """An assistant message's blocks replayed (``session/load``) as seen live: text (with
    its ``[n]``), thinking, server tool calls and results, then the sources it cites."""
    cited = CitedStream()
    updates: list[SessionUpdate] = []
    for block in blocks:
        if isinstance(block, TextBlock) and block.citations:
            updates.append(message_chunk(block.text + cited.numbers_of(block.citations)))
        elif isinstance(block, TextBlock) and block.text.strip():
            updates.append(message_chunk(block.text))
        elif isinstance(block, ThinkingBlock):
            updates.append(thought_chunk(block.thinking.strip() or OMITTED_THINKING))
        elif isinstance(block, RedactedThinkingBlock):
            updates.append(thought_chunk(REDACTED_THINKING))
        elif isinstance(block, ServerToolUseBlock):
            updates.append(server_call(block.id, block.name, block.input))
        elif isinstance(block, ServerToolResultBlock):
            summary = summarize_result(block)
            sources = [(s.url, s.title) for s in summary.sources]
            updates.append(
                server_result(block.tool_use_id, summary.name, sources, summary.error_code)
            )
    return updates + source_updates(cited.sources())
