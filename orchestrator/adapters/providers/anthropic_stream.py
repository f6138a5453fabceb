"""Assembles one streamed Anthropic response from the SDK's raw events.

:class:`ResponseBuilder` is fed the raw events one by one and returns our stream events for
each (``text_delta`` → :class:`TextDelta`, ``thinking_delta`` → :class:`ThinkingDelta`, a
``tool_use`` block start → :class:`ToolCallStart`, ``input_json_delta`` →
:class:`ToolCallArgsDelta`, a finished ``server_tool_use`` → :class:`ServerToolCall`, a server
tool's result → :class:`ServerToolResult`, ``citations_delta`` → :class:`CitationDelta`);
:meth:`ResponseBuilder.finish` then gives the history blocks, the stop reason and usage as one
:class:`ResponseComplete`, or raises :class:`IncompleteStreamError` when the stream stopped
before ``message_stop``. It does no I/O.

Server tool blocks and citations are kept as the API sent them (the SDK's ``to_dict``, which
leaves out what the API did not set): their encrypted fields must come back byte for byte.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

from orchestrator.adapters.providers.base import (
    CitationDelta,
    ProviderStreamError,
    ResponseComplete,
    ServerToolCall,
    ServerToolResult,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallArgsDelta,
    ToolCallStart,
    Usage,
)
from orchestrator.core.history import (
    SERVER_RESULT_TYPES,
    Block,
    RedactedThinkingBlock,
    ServerToolResultBlock,
    ServerToolUseBlock,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
)


class IncompleteStreamError(ProviderStreamError):
    """The event stream ended cleanly but before ``message_stop`` (the provider retries it as
    the :class:`ProviderStreamError` it is)."""


@dataclass(slots=True)
class _PartialBlock:
    kind: str
    parts: list[str] = field(default_factory=list)
    signature: str = ""
    id: str = ""
    name: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    """A server block's fields beyond the ones the pod reads, as the API sent them."""
    citations: list[dict[str, Any]] = field(default_factory=list)
    result: ServerToolResultBlock | None = None


def _api_dict(model: Any) -> dict[str, Any]:
    """An SDK model as the API sent it (unset fields left out)."""
    data: dict[str, Any] = model.to_dict(mode="json")
    return data


@dataclass(slots=True)
class ResponseBuilder:
    """Turns raw SDK stream events into our events and assembles the final response."""

    blocks: dict[int, _PartialBlock] = field(default_factory=dict)
    stop_reason: str | None = None
    usage: Usage = field(default_factory=Usage)
    model: str | None = None
    """The model that answered (``message.model``), for telemetry."""
    done: bool = False

    def feed(self, event: Any) -> list[StreamEvent]:
        """Our events for one raw event (often none)."""
        kind = event.type
        if kind == "message_start":
            self.model = getattr(event.message, "model", None)
            self._take_usage(event.message.usage)
        elif kind == "content_block_start":
            return self._start(event.index, event.content_block)
        elif kind == "content_block_delta":
            return self._delta(event.index, event.delta)
        elif kind == "content_block_stop":
            return self._stop(event.index)
        elif kind == "message_delta":
            if event.delta.stop_reason is not None:
                self.stop_reason = event.delta.stop_reason
            self._take_usage(event.usage)
        elif kind == "message_stop":
            self.done = True
        return []

    def whole(self, message: Any) -> list[StreamEvent]:
        """Our events for a complete SDK ``Message`` (a server that answered a streaming
        request with one JSON body): as if each block had streamed in one piece."""
        self.model = getattr(message, "model", None)
        self._take_usage(message.usage)
        events: list[StreamEvent] = []
        for index, block in enumerate(message.content):
            events += self._start(index, block)
            if block.type == "tool_use" and block.input:
                arguments = json.dumps(block.input, ensure_ascii=False)
                self.blocks[index].parts.append(arguments)
                events.append(ToolCallArgsDelta(block.id, arguments))
            elif block.type == "server_tool_use":
                self.blocks[index].parts.append(json.dumps(block.input, ensure_ascii=False))
                events += self._stop(index)
            elif block.type == "thinking":
                self.blocks[index].signature = block.signature or ""
        if message.stop_reason is not None:
            self.stop_reason = message.stop_reason
        self.done = True
        return events

    def _take_usage(self, usage: Any) -> None:
        # message_start carries the input counts, message_delta the output (and, on some API
        # versions, the input counts again): a count the event leaves out keeps its value.
        counts = {
            name: getattr(usage, name, None)
            for name in (
                "input_tokens",
                "cache_creation_input_tokens",
                "cache_read_input_tokens",
                "output_tokens",
            )
        }
        written = getattr(usage, "cache_creation", None)
        if written is not None:
            # 1-hour entries cost more to write than 5-minute ones (core/prices.py).
            counts["one_hour_cache_writes"] = getattr(written, "ephemeral_1h_input_tokens", None)
        server = getattr(usage, "server_tool_use", None)
        if server is not None:
            counts["web_search_requests"] = getattr(server, "web_search_requests", None)
            counts["web_fetch_requests"] = getattr(server, "web_fetch_requests", None)
        self.usage = replace(self.usage, **{k: v for k, v in counts.items() if v is not None})

    def _start(self, index: int, block: Any) -> list[StreamEvent]:
        kind = block.type
        if kind == "text":
            partial = _PartialBlock("text", [block.text] if block.text else [])
            # A whole message (not streamed) carries its citations on the block itself.
            partial.citations = [_api_dict(c) for c in getattr(block, "citations", None) or []]
            self.blocks[index] = partial
            return [TextDelta(block.text)] if block.text else []
        if kind == "thinking":
            partial = _PartialBlock("thinking", [block.thinking] if block.thinking else [])
            partial.signature = block.signature or ""
            self.blocks[index] = partial
            return [ThinkingDelta(block.thinking)] if block.thinking else []
        if kind == "tool_use":
            self.blocks[index] = _PartialBlock("tool_use", id=block.id, name=block.name)
            return [ToolCallStart(block.id, block.name)]
        if kind == "redacted_thinking":
            # Arrives whole in its start event: opaque, kept byte for byte.
            self.blocks[index] = _PartialBlock(kind, [block.data])
            return []
        if kind == "server_tool_use":
            # Its input streams as input_json_delta like a client call's; it is reported when
            # whole (content_block_stop), and never as a client tool call.
            extra = {
                k: v
                for k, v in _api_dict(block).items()
                if k not in ("type", "id", "name", "input")
            }
            self.blocks[index] = _PartialBlock(kind, id=block.id, name=block.name, extra=extra)
            return []
        if kind in SERVER_RESULT_TYPES:
            # Arrives whole in its start event, encrypted content and all.
            data = _api_dict(block)
            result = ServerToolResultBlock(
                type=kind,
                tool_use_id=block.tool_use_id,
                content=data.get("content"),
                extra={
                    k: v for k, v in data.items() if k not in ("type", "tool_use_id", "content")
                },
            )
            self.blocks[index] = _PartialBlock(kind, result=result)
            return [ServerToolResult(result)]
        # Blocks of server tools the pod never declares have no place in the history.
        self.blocks[index] = _PartialBlock(kind)
        return []

    def _delta(self, index: int, delta: Any) -> list[StreamEvent]:
        partial = self.blocks.get(index)
        if partial is None:
            raise IncompleteStreamError(f"delta for content block {index} before its start")
        kind = delta.type
        if kind == "text_delta" and delta.text:
            partial.parts.append(delta.text)
            return [TextDelta(delta.text)]
        if kind == "thinking_delta" and delta.thinking:
            partial.parts.append(delta.thinking)
            return [ThinkingDelta(delta.thinking)]
        if kind == "signature_delta":
            partial.signature += delta.signature
        elif kind == "input_json_delta" and delta.partial_json:
            partial.parts.append(delta.partial_json)
            if partial.kind == "tool_use":
                return [ToolCallArgsDelta(partial.id, delta.partial_json)]
        elif kind == "citations_delta":
            citation = _api_dict(delta.citation)
            partial.citations.append(citation)
            return [CitationDelta(citation)]
        return []

    def _stop(self, index: int) -> list[StreamEvent]:
        partial = self.blocks.get(index)
        if partial is None or partial.kind != "server_tool_use":
            return []
        return [ServerToolCall(partial.id, partial.name, self._args(partial))]

    def finish(self) -> ResponseComplete:
        """The whole response; raises if the stream stopped short."""
        if not self.done:
            raise IncompleteStreamError("the event stream ended before message_stop")
        blocks: list[Block] = []
        for index in sorted(self.blocks):
            partial = self.blocks[index]
            text = "".join(partial.parts)
            if partial.kind == "text" and partial.citations:
                blocks.append(TextBlock(text=text, citations=partial.citations))
            elif partial.kind == "text" and text:
                blocks.append(TextBlock(text=text))
            elif partial.kind == "thinking":
                blocks.append(ThinkingBlock(thinking=text, signature=partial.signature))
            elif partial.kind == "redacted_thinking":
                blocks.append(RedactedThinkingBlock(data=text))
            elif partial.kind == "tool_use":
                blocks.append(
                    ToolUseBlock(id=partial.id, name=partial.name, input=self._args(partial))
                )
            elif partial.kind == "server_tool_use":
                blocks.append(
                    ServerToolUseBlock(
                        id=partial.id,
                        name=partial.name,
                        input=self._args(partial),
                        extra=partial.extra,
                    )
                )
            elif partial.result is not None:
                blocks.append(partial.result)
        return ResponseComplete(
            blocks=blocks,
            stop_reason=self.stop_reason or "end_turn",
            usage=self.usage,
            model=self.model,
        )

    def _args(self, partial: _PartialBlock) -> dict[str, Any]:
        text = "".join(partial.parts)
        if not text.strip():
            return {}
        try:
            value = json.loads(text)
        except ValueError:
            value = None
        if not isinstance(value, dict):
            # Typically a call cut off by max_tokens; running it with guessed args would be worse.
            raise ProviderStreamError(
                f"tool call {partial.id} ({partial.name}) has arguments that are not a JSON "
                f"object (stop_reason {self.stop_reason}): {text[:200]!r}",
                retryable=False,
            )
        return value
