"""Mapping history items to the Anthropic Messages wire format.

Rules (all pure): assistant items become ``assistant`` messages; every maximal run of
non-assistant items becomes one ``user`` message whose ``tool_result`` blocks come first and
whose text blocks (user text, system messages, an attached image after its name) follow in
history order. A tool result's text is
``summary`` + newline + ``content``, followed by its images and PDF documents (an MCP tool's
or resource's) when it has any. Pruned results send their summary only.

:class:`WireBuilder` keeps the built messages between requests so that a round costs work
proportional to what changed, not to the length of the history.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Any

from orchestrator.core.history import (
    AssistantMessage,
    Item,
    RedactedThinkingBlock,
    ServerToolResultBlock,
    ServerToolUseBlock,
    SystemMessage,
    TextBlock,
    ThinkingBlock,
    ToolResult,
    ToolUseBlock,
)

WireMessage = dict[str, Any]


def assistant_blocks(item: AssistantMessage) -> list[dict[str, Any]]:
    """The wire content blocks of one assistant message (empty text blocks dropped)."""
    out: list[dict[str, Any]] = []
    for block in item.blocks:
        if isinstance(block, TextBlock):
            if block.citations is not None:
                # Cited text goes back whatever it holds: the citations point into it.
                out.append({"type": "text", "text": block.text, "citations": block.citations})
            elif block.text.strip():
                out.append({"type": "text", "text": block.text})
        elif isinstance(block, ThinkingBlock):
            out.append(
                {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
            )
        elif isinstance(block, RedactedThinkingBlock):
            out.append({"type": "redacted_thinking", "data": block.data})
        elif isinstance(block, ToolUseBlock):
            out.append(
                {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
            )
        elif isinstance(block, ServerToolUseBlock):
            out.append(
                {
                    "type": "server_tool_use",
                    "id": block.id,
                    "name": block.name,
                    "input": block.input,
                    **block.extra,
                }
            )
        elif isinstance(block, ServerToolResultBlock):
            out.append(
                {
                    "type": block.type,
                    "tool_use_id": block.tool_use_id,
                    "content": block.content,
                    **block.extra,
                }
            )
    return out


def tool_result_block(item: ToolResult, *, pruned: bool = False) -> dict[str, Any]:
    """The wire block of a tool result; a pruned one carries its summary only."""
    text = item.summary if pruned or item.content is None else item.wire_text
    content: str | list[dict[str, Any]] = text
    if (item.images or item.documents) and not pruned:
        content = [
            {"type": "text", "text": text},
            *(image.block() for image in item.images),
            *(dict(document.block()) for document in item.documents),
        ]
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": item.call_id, "content": content}
    if item.is_error:
        block["is_error"] = True
    return block


def _user_blocks(items: list[Item], prune_before_turn: int) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = []
    texts: list[dict[str, Any]] = []
    for item in items:
        if isinstance(item, ToolResult):
            results.append(tool_result_block(item, pruned=item.turn < prune_before_turn))
        else:
            text = item.text  # type: ignore[union-attr]
            if text.strip():
                texts.append({"type": "text", "text": text})
            if isinstance(item, SystemMessage) and item.image is not None:
                texts.append(item.image.block())
    return results + texts


def to_wire(items: list[Item], *, prune_before_turn: int = 0) -> list[WireMessage]:
    """Map a whole history to wire messages; results of turns before the bound are pruned."""
    return _build(items, 0, prune_before_turn)[0]


def _build(
    items: list[Item], offset: int, prune_before_turn: int
) -> tuple[list[WireMessage], list[int]]:
    """Wire messages plus, for each, the index (offset-based) of its first item."""
    messages: list[WireMessage] = []
    starts: list[int] = []
    pending: list[Item] = []
    pending_start = 0
    for i, item in enumerate(items, start=offset):
        if isinstance(item, AssistantMessage):
            blocks = assistant_blocks(item)
            if not blocks:
                continue  # an empty response is no message at all
            if pending:
                messages.append(
                    {"role": "user", "content": _user_blocks(pending, prune_before_turn)}
                )
                starts.append(pending_start)
                pending = []
            if messages and messages[-1]["role"] == "assistant":
                # The API merges same-role neighbours; do it here so the validator sees it.
                messages[-1] = {"role": "assistant", "content": messages[-1]["content"] + blocks}
            else:
                messages.append({"role": "assistant", "content": blocks})
                starts.append(i)
        else:
            if not pending:
                pending_start = i
            pending.append(item)
    if pending:
        messages.append({"role": "user", "content": _user_blocks(pending, prune_before_turn)})
        starts.append(pending_start)
    return messages, starts


class WireBuilder:
    """Incremental :func:`to_wire`: reuses the messages of the unchanged prefix.

    History is append-only, so only the last message can change when items arrive (a user
    message absorbs new results and notes). A moved prune bound or a different history rebuilds.
    """

    def __init__(self) -> None:
        self._messages: list[WireMessage] = []
        self._starts: list[int] = []
        self._consumed = 0
        self._prune_before_turn = 0
        self._first_seq: int | None = None
        self._last_consumed: Item | None = None

    def build(self, items: list[Item], *, prune_before_turn: int = 0) -> list[WireMessage]:
        """Wire messages for ``items``; the returned list is a fresh shallow copy."""
        first_seq = items[0].seq if items else None
        if (
            prune_before_turn < self._prune_before_turn
            or len(items) < self._consumed
            or first_seq != self._first_seq
            # Same length and first seq is not proof of the same history (a reloaded or
            # cleared session starts at seq 1 again); items are never copied, so identity is.
            or (self._consumed and items[self._consumed - 1] is not self._last_consumed)
        ):
            self._reset()
            self._first_seq = first_seq
        elif prune_before_turn > self._prune_before_turn:
            # Only the turns that just left the window change; turns only grow along the
            # history, so everything before the first such item stays as built.
            first = bisect_left(items, self._prune_before_turn, key=lambda item: item.turn)
            self._rewind_to(first)
        self._prune_before_turn = prune_before_turn
        if len(items) > self._consumed:
            self._rewind_to(self._consumed)
            start = self._starts[-1] if self._starts else 0
            if self._messages:
                self._messages.pop()
                self._starts.pop()
            messages, starts = _build(items[start:], start, prune_before_turn)
            self._messages.extend(messages)
            self._starts.extend(starts)
            self._consumed = len(items)
            self._last_consumed = items[-1]
        return list(self._messages)

    @property
    def consumed(self) -> int:
        """How many items of the last history built are wired already."""
        return self._consumed

    def _reset(self) -> None:
        self._messages, self._starts, self._consumed = [], [], 0
        self._last_consumed = None

    def _rewind_to(self, item_index: int) -> None:
        """Drop the messages built from items at ``item_index`` or later (keep one to rebuild)."""
        keep = bisect_right(self._starts, item_index)
        if keep < len(self._messages):
            # The message holding item_index is kept so build() re-opens it from its start.
            del self._messages[keep:]
            del self._starts[keep:]
            self._consumed = min(self._consumed, item_index)
