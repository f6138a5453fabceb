"""The scripted provider's server tools: web search and fetch the way the API runs them.

A scripted reply may make server calls (``server_calls``), cite sources (``citations``) and
stop with ``pause_turn``; the blocks it produces have the API's shape, with stand-in
``encrypted_content`` / ``encrypted_index`` derived from the call's id and URL, so a request
that sends one back changed is refused as the API refuses it, even after a restart.

Like the API, it runs a server call left open before it answers: a request whose last
assistant content ends a ``pause_turn`` with an open call, or whose mixed message (server and
client calls) is followed by the client results, gets a reply that opens with those calls'
results (docs/scripted-provider.md).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from orchestrator.adapters.providers.base import CitationDelta, ServerToolCall, ServerToolResult
from orchestrator.core.history import ServerToolResultBlock, ServerToolUseBlock
from orchestrator.core.validator import merge_same_role

__all__ = [
    "ScriptedCitation",
    "ScriptedServerCall",
    "ServerRun",
    "changed_server_content",
    "citation_block",
    "open_calls_in",
    "run_server_call",
]


class ScriptedServerCall(BaseModel):
    """A server tool call the scripted model makes, and what the API answers to it."""

    model_config = ConfigDict(extra="forbid")

    name: Literal["web_search", "web_fetch"] = "web_search"
    input: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None
    result: Literal["results", "error", "none"] = "results"
    """``results``: pages in the same reply; ``error``: an error result (``error_code``);
    ``none``: no result in this reply (the API runs it later: a ``pause_turn`` or, beside
    client calls, the mixed case)."""
    pages: list[dict[str, str]] = Field(
        default_factory=lambda: [{"url": "https://example.com/", "title": "Example"}]
    )
    """``{"url", "title"}`` of each page found (search) or the one fetched (fetch)."""
    error_code: str = "unavailable"


class ScriptedCitation(BaseModel):
    """A citation on the reply's text: a search result location, as the API words it."""

    model_config = ConfigDict(extra="forbid")

    url: str
    title: str = ""
    cited_text: str = ""


def _stand_in(*parts: str) -> str:
    """Deterministic opaque text standing in for the API's encrypted fields."""
    return "scripted-enc-" + hashlib.sha256("\0".join(parts).encode()).hexdigest()[:24]


def citation_block(citation: ScriptedCitation) -> dict[str, Any]:
    """The API's ``web_search_result_location`` citation for a scripted citation."""
    return {
        "type": "web_search_result_location",
        "url": citation.url,
        "title": citation.title,
        "cited_text": citation.cited_text,
        "encrypted_index": _stand_in("index", citation.url, citation.cited_text),
    }


def _content(call_id: str, call: ScriptedServerCall) -> Any:
    error_type = f"{call.name}_tool_result_error"
    if call.result == "error" or (call.name == "web_fetch" and not call.pages):
        return {"type": error_type, "error_code": call.error_code}
    if call.name == "web_fetch":
        page = call.pages[0]
        return {
            "type": "web_fetch_result",
            "url": page["url"],
            "retrieved_at": "2026-01-01T00:00:00Z",
            "content": {
                "type": "document",
                "source": {
                    "type": "text",
                    "media_type": "text/plain",
                    "data": f"The scripted page {page['url']}.",
                },
                "title": page.get("title", ""),
            },
        }
    return [
        {
            "type": "web_search_result",
            "url": page["url"],
            "title": page.get("title", ""),
            "encrypted_content": _stand_in(call_id, page["url"]),
            "page_age": None,
        }
        for page in call.pages
    ]


@dataclass
class ServerRun:
    """What a reply's server calls produced: stream events, blocks, and the requests made."""

    events: list[ServerToolCall | ServerToolResult | CitationDelta] = field(default_factory=list)
    blocks: list[ServerToolUseBlock | ServerToolResultBlock] = field(default_factory=list)
    searches: int = 0
    fetches: int = 0

    def result(self, call_id: str, call: ScriptedServerCall) -> None:
        """The API ran the call: its result block (and the request it counts)."""
        kind: Literal["web_search_tool_result", "web_fetch_tool_result"] = (
            "web_fetch_tool_result" if call.name == "web_fetch" else "web_search_tool_result"
        )
        block = ServerToolResultBlock(
            type=kind, tool_use_id=call_id, content=_content(call_id, call)
        )
        self.blocks.append(block)
        self.events.append(ServerToolResult(block))
        if call.name == "web_fetch":
            self.fetches += 1
        else:
            self.searches += 1


def run_server_call(run: ServerRun, call_id: str, call: ScriptedServerCall) -> None:
    """One scripted server call: the call block, then its result unless it stays open."""
    block = ServerToolUseBlock(id=call_id, name=call.name, input=call.input)
    run.blocks.append(block)
    run.events.append(ServerToolCall(call_id, call.name, call.input))
    if call.result != "none":
        run.result(call_id, call)


def open_calls_in(messages: list[dict[str, Any]]) -> list[tuple[str, str, dict[str, Any]]]:
    """The server calls the API must run before answering this request: those of the last
    assistant content left without a result, when it is last (a ``pause_turn``
    continuation) or a mixed message followed by the client results. ``(id, name, input)``."""
    merged = merge_same_role(messages)
    if merged and merged[-1].get("role") == "assistant":
        content = merged[-1]["content"]
    elif len(merged) >= 2 and merged[-2].get("role") == "assistant":
        content = merged[-2]["content"]
        if not any(b.get("type") == "tool_use" for b in content):
            return []
    else:
        return []
    answered = {b.get("tool_use_id") for b in content if b.get("type", "").endswith("_result")}
    return [
        (str(b.get("id")), str(b.get("name")), dict(b.get("input") or {}))
        for b in content
        if b.get("type") == "server_tool_use" and b.get("id") not in answered
    ]


def changed_server_content(messages: list[dict[str, Any]]) -> str | None:
    """Why the request would be refused for an encrypted field it issued that came back
    changed (results' ``encrypted_content``, citations' ``encrypted_index``); None if intact."""
    for index, message in enumerate(messages):
        content = message.get("content")
        if message.get("role") != "assistant" or not isinstance(content, list):
            continue
        for position, block in enumerate(content):
            if not isinstance(block, dict):
                continue
            where = f"messages.{index}.content.{position}"
            if block.get("type") == "web_search_tool_result" and isinstance(
                block.get("content"), list
            ):
                for page in block["content"]:
                    sealed = isinstance(page, dict) and str(
                        page.get("encrypted_content", "")
                    ).startswith("scripted-enc-")
                    if sealed and page["encrypted_content"] != _stand_in(
                        str(block.get("tool_use_id")), str(page.get("url"))
                    ):
                        return f"{where}: invalid `encrypted_content` in a web search result"
            for cite in block.get("citations") or []:
                sealed = isinstance(cite, dict) and str(cite.get("encrypted_index", "")).startswith(
                    "scripted-enc-"
                )
                if sealed and cite["encrypted_index"] != _stand_in(
                    "index", str(cite.get("url")), str(cite.get("cited_text"))
                ):
                    return f"{where}: invalid `encrypted_index` in a citation"
    return None
