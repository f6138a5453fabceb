"""What a person is shown of the API's own tools (web search, web fetch), read from the blocks.

The blocks themselves stay exactly as the API sent them (see :class:`ServerToolResultBlock`);
these pure functions only read the parts people look at: the sources a result lists, the error
code a failed call reports, and the source a citation points to. Everything returned is the
model's or a web page's text, so front-ends sanitise it before it reaches a terminal.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from orchestrator.core.history import (
    SERVER_TOOL_ID_PREFIX,
    ServerToolResultBlock,
)

__all__ = [
    "CitedSource",
    "ResultSummary",
    "Source",
    "cited_source",
    "is_server_call_id",
    "summarize_result",
]


@dataclass(frozen=True, slots=True)
class Source:
    """A page a result lists: its URL and, when the API gave one, its title."""

    url: str
    title: str | None = None


@dataclass(frozen=True, slots=True)
class ResultSummary:
    """A server tool result as people see it: the pages, or the error code."""

    name: str
    """``web_search`` or ``web_fetch``."""
    sources: list[Source]
    error_code: str | None = None


@dataclass(frozen=True, slots=True)
class CitedSource:
    """Where one citation points: a URL (web search) or a document's title (web fetch)."""

    url: str | None
    title: str | None
    cited_text: str


_NAMES = {"web_search_tool_result": "web_search", "web_fetch_tool_result": "web_fetch"}


def is_server_call_id(call_id: str) -> bool:
    """Whether an id is one of the API's own tool calls (never answered by the pod)."""
    return call_id.startswith(SERVER_TOOL_ID_PREFIX)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def summarize_result(block: ServerToolResultBlock) -> ResultSummary:
    """The pages a result lists, or its error code; tolerant of shapes it does not know."""
    name = _NAMES.get(block.type, block.type)
    content = block.content
    if isinstance(content, dict) and isinstance(content.get("error_code"), str):
        return ResultSummary(name, [], error_code=content["error_code"])
    entries = content if isinstance(content, list) else [content]
    sources: list[Source] = []
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        url = _text(entry.get("url"))
        if url is None:
            continue
        title = _text(entry.get("title"))
        document = entry.get("content")
        if title is None and isinstance(document, dict):
            title = _text(document.get("title"))  # a fetched page's title is its document's
        sources.append(Source(url, title))
    return ResultSummary(name, sources)


def cited_source(citation: dict[str, Any]) -> CitedSource:
    """Where a citation points (a search result's URL, or a fetched document's title)."""
    return CitedSource(
        url=_text(citation.get("url")),
        title=_text(citation.get("title")) or _text(citation.get("document_title")),
        cited_text=_text(citation.get("cited_text")) or "",
    )
