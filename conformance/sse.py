"""A reply with its ids and token counts fixed, rendered as one JSON message or as SSE.

:func:`plan_reply` fixes everything about a :class:`~conformance.script.Reply` that the
answer depends on (ids, the thinking signature, the stop reason, token counts);
:class:`PlannedReply` then renders it either as the message of a non-streaming answer or as
the exact Anthropic event sequence: ``message_start``, ``ping``, ``content_block_start`` /
``_delta`` / ``_stop`` per block, ``message_delta`` with the stop reason and usage,
``message_stop``. Text, thinking and tool-call JSON are cut into deltas of ``chunk_size``
characters; each delta carries the reply's ``delay_s``.

Server tools stream as the API streams them: a ``server_tool_use`` block's input as
``input_json_delta`` fragments, a result block whole in its ``content_block_start``, a cited
text's citations as ``citations_delta`` events before its text; usage counts them
(``server_tool_use.web_search_requests``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from conformance.cache import CacheUsage
from conformance.script import Reply, fake_redacted, fake_signature
from conformance.tokens import count_output_tokens
from conformance.web import SERVER_RESULT_TYPES, WebPlan

__all__ = ["PlannedReply", "SseEvent", "plan_reply"]


def _chunks(text: str, size: int) -> list[str]:
    size = max(1, size)
    return [text[i : i + size] for i in range(0, len(text), size)]


@dataclass(slots=True)
class SseEvent:
    """One server-sent event, and how long to wait before sending it."""

    name: str
    data: dict[str, Any]
    delay_before: float = 0.0

    def encode(self) -> bytes:
        """The event's bytes on the wire."""
        return f"event: {self.name}\ndata: {json.dumps(self.data)}\n\n".encode()


@dataclass(slots=True)
class PlannedReply:
    """A reply with its ids and token counts fixed, ready to render either way."""

    message_id: str
    model: str
    blocks: list[dict[str, Any]]
    stop_reason: str
    usage: CacheUsage
    output_tokens: int
    chunk_size: int
    delay_s: float
    server_tool_use: dict[str, int] | None = None
    """``usage.server_tool_use`` (searches and fetches the reply ran), None when none."""

    def message(self) -> dict[str, Any]:
        """The whole message, as a non-streaming answer's body."""
        return {
            "id": self.message_id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": self.blocks,
            "stop_reason": self.stop_reason,
            "stop_sequence": None,
            "usage": self._usage(self.output_tokens),
        }

    def _usage(self, output_tokens: int) -> dict[str, Any]:
        out = self.usage.fields() | {"output_tokens": output_tokens, "service_tier": "standard"}
        if self.server_tool_use is not None:
            out["server_tool_use"] = dict(self.server_tool_use)
        return out

    def events(self) -> list[SseEvent]:
        """The stream's events, in order."""
        start = self.message() | {
            "content": [],
            "stop_reason": None,
            "usage": self._usage(1),
        }
        out = [
            SseEvent("message_start", {"type": "message_start", "message": start}),
            SseEvent("ping", {"type": "ping"}),
        ]
        for index, block in enumerate(self.blocks):
            out.extend(self._block_events(index, block))
        out.append(
            SseEvent(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": self.stop_reason, "stop_sequence": None},
                    # Cumulative counts, input included, as the API sends them at the end.
                    "usage": {
                        "input_tokens": self.usage.input_tokens,
                        "cache_creation_input_tokens": self.usage.cache_creation_input_tokens,
                        "cache_read_input_tokens": self.usage.cache_read_input_tokens,
                        "output_tokens": self.output_tokens,
                    }
                    | (
                        {"server_tool_use": dict(self.server_tool_use)}
                        if self.server_tool_use is not None
                        else {}
                    ),
                },
            )
        )
        out.append(SseEvent("message_stop", {"type": "message_stop"}))
        return out

    def _block_events(self, index: int, block: dict[str, Any]) -> list[SseEvent]:
        kind = block["type"]
        if kind == "text":
            empty: dict[str, Any] = {"type": "text", "text": ""}
            deltas = [
                {"type": "citations_delta", "citation": dict(c)}
                for c in block.get("citations") or []
            ]
            deltas += [
                {"type": "text_delta", "text": c} for c in _chunks(block["text"], self.chunk_size)
            ]
        elif kind == "thinking":
            empty = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [
                {"type": "thinking_delta", "thinking": c}
                for c in _chunks(block["thinking"], self.chunk_size)
            ]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        elif kind == "redacted_thinking" or kind in SERVER_RESULT_TYPES.values():
            # Arrives whole in its start event, as the API sends it.
            empty, deltas = dict(block), []
        else:
            empty = {"type": kind, "id": block["id"], "name": block["name"], "input": {}}
            arguments = json.dumps(block["input"]) if block["input"] else ""
            # The real API opens every tool call with an empty fragment.
            deltas = [{"type": "input_json_delta", "partial_json": ""}]
            deltas += [
                {"type": "input_json_delta", "partial_json": c}
                for c in _chunks(arguments, self.chunk_size)
            ]
        out = [
            SseEvent(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": empty},
            )
        ]
        out += [
            SseEvent(
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": d},
                self.delay_s,
            )
            for d in deltas
        ]
        out.append(SseEvent("content_block_stop", {"type": "content_block_stop", "index": index}))
        return out


PROFILE_THINKING = "Let me think this through before acting."
PROFILE_REDACTED = "(reasoning the API chose to encrypt)"
"""What the thinking profile adds to a reply that does not think of its own."""


def plan_reply(
    reply: Reply,
    *,
    model: str,
    usage: CacheUsage,
    next_id: Callable[[str], str],
    thinking: dict[str, Any] | None = None,
    profile: bool = False,
    web: WebPlan | None = None,
) -> PlannedReply:
    """Fix a reply's ids (``next_id("msg")``, ``next_id("toolu")``) and token counts.

    ``usage`` is the request's input as the prompt cache accounted it; the reply's own
    ``input_tokens`` (the uncached part) and ``output_tokens``, when set, win over it and
    over the counter. ``thinking`` is the request's parameter: a reply thinks only when it
    turns thinking on (with ``display: "omitted"`` the text is empty, the signature there);
    ``profile`` makes every such reply think, and hold a redacted block too. ``web`` holds
    the reply's server tool blocks (:func:`~conformance.web.plan_server_blocks`): those run
    come after the thinking, then the text (citing what they found), then the calls left
    without a result, then the tool calls.
    """
    blocks: list[dict[str, Any]] = []
    on = isinstance(thinking, dict) and thinking.get("type") in ("adaptive", "enabled")
    text, redacted = reply.thinking, list(reply.redacted)
    if on and profile:
        text = PROFILE_THINKING if text is None else text
        redacted = redacted or [PROFILE_REDACTED]
    if on and text is not None:
        shown = "" if (thinking or {}).get("display") == "omitted" else text
        signature = reply.signature
        if signature is None:
            signature = fake_signature(shown)
        blocks.append({"type": "thinking", "thinking": shown, "signature": signature})
    if on:
        blocks += [{"type": "redacted_thinking", "data": fake_redacted(p)} for p in redacted]
    web = web or WebPlan()
    pausing = reply.stop_reason == "pause_turn" and bool(web.leading or web.pending)
    if pausing:
        # A paused server loop ends in its server blocks: the text came before the search.
        blocks += [{"type": "text", "text": reply.text}] if reply.text else []
        blocks += web.leading + web.pending
    else:
        blocks += web.leading
        if reply.text and web.citations:
            blocks.append({"type": "text", "text": reply.text, "citations": web.citations})
        elif reply.text:
            blocks.append({"type": "text", "text": reply.text})
        blocks += web.pending
    for call in reply.tool_calls:
        blocks.append(
            {
                "type": "tool_use",
                "id": call.id or next_id("toolu"),
                "name": call.name,
                "input": dict(call.input),
            }
        )
    stop_reason = reply.stop_reason or ("tool_use" if reply.tool_calls else "end_turn")
    if stop_reason == "pause_turn" and not any(b["type"] == "server_tool_use" for b in blocks):
        # A server loop pauses only when there is one: no server tool was declared.
        stop_reason = "tool_use" if reply.tool_calls else "end_turn"
    return PlannedReply(
        message_id=next_id("msg"),
        model=model,
        blocks=blocks,
        stop_reason=stop_reason,
        usage=usage
        if reply.input_tokens is None
        else replace(usage, input_tokens=reply.input_tokens),
        output_tokens=reply.output_tokens or count_output_tokens(blocks),
        chunk_size=reply.chunk_size,
        delay_s=reply.delay_s,
        server_tool_use=web.usage(),
    )
