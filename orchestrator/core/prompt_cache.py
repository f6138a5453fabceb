"""Prompt-cache breakpoints: where a request marks ``cache_control`` so the next one reads it.

The API caches a request's prefix (tools, then system, then messages, block by block) up to
each block marked with ``cache_control``, and a later request whose prefix is byte-identical up
to one of its own breakpoints (or up to about 20 blocks before it) reads that part for a tenth
of the price. At most four breakpoints are allowed. The placement here uses three:

1. the **system prompt** (its last block): covers the tools and system, which do not change
   within a pod's life, so every request reads them even after history was rewritten;
2. the **end of the previous request** (its last block, where that request's own breakpoint
   was): an exact hit whatever happened since, however many blocks were added — the 20-block
   lookback of the newest breakpoint is never relied on;
3. the **end of this request**: written now, read by the next request.

Everything is pure: the caller's message dicts are never changed (the wire builder shares
them between requests); only the messages and blocks that get a marker are copied.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

CacheTTL = Literal["5m", "1h"]

MAX_BREAKPOINTS = 4
"""The API refuses a request with more."""


@dataclass(frozen=True, slots=True)
class BlockPosition:
    """Where a block is: its message's index and its index in that message's content."""

    message: int
    block: int


@dataclass(frozen=True, slots=True)
class CachedRequest:
    """A request with its breakpoints placed, and where its last one is (for the next)."""

    system: list[dict[str, Any]]
    messages: list[dict[str, Any]]
    end: BlockPosition | None


def _marker(ttl: CacheTTL) -> dict[str, str]:
    # The 5-minute TTL is the API's default; leaving it out keeps the body as small as before.
    return {"type": "ephemeral"} if ttl == "5m" else {"type": "ephemeral", "ttl": ttl}


def _content(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content) if isinstance(content, list) else []


def last_position(messages: list[dict[str, Any]]) -> BlockPosition | None:
    """The position of the last block of the last message."""
    for index in range(len(messages) - 1, -1, -1):
        blocks = _content(messages[index])
        if blocks:
            return BlockPosition(index, len(blocks) - 1)
    return None


def place_breakpoints(
    system: str,
    messages: list[dict[str, Any]],
    *,
    ttl: CacheTTL = "5m",
    previous_end: BlockPosition | None = None,
) -> CachedRequest:
    """The request's system blocks and messages with their breakpoints placed.

    ``previous_end`` is :attr:`CachedRequest.end` of the request sent before this one.
    """
    marker = _marker(ttl)
    system_blocks = [{"type": "text", "text": system, "cache_control": marker}] if system else []
    end = last_position(messages)
    wanted: set[BlockPosition] = set()
    if end is not None:
        wanted.add(end)
    if previous_end is not None and _exists(messages, previous_end) and previous_end != end:
        wanted.add(previous_end)
    marked = list(messages)
    for position in sorted(wanted, key=lambda p: (p.message, p.block)):
        message = dict(marked[position.message])
        blocks = _content(message)
        block = dict(blocks[position.block])
        if block.get("type") in ("thinking", "redacted_thinking"):
            continue  # the API takes no cache_control on thinking blocks
        block["cache_control"] = marker
        blocks[position.block] = block
        message["content"] = blocks
        marked[position.message] = message
    return CachedRequest(system=system_blocks, messages=marked, end=end)


def _exists(messages: list[dict[str, Any]], position: BlockPosition) -> bool:
    return position.message < len(messages) and position.block < len(
        _content(messages[position.message])
    )


def count_breakpoints(request: dict[str, Any]) -> int:
    """How many ``cache_control`` markers a request body carries (tools, system, messages)."""
    blocks: list[Any] = list(request.get("tools") or [])
    system = request.get("system")
    if isinstance(system, list):
        blocks += system
    for message in request.get("messages") or []:
        blocks += _content(message)
    return sum(1 for block in blocks if isinstance(block, dict) and "cache_control" in block)


def without_breakpoints(value: Any) -> Any:
    """A copy of a request body (or any part) with every ``cache_control`` marker removed."""
    if isinstance(value, dict):
        return {k: without_breakpoints(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [without_breakpoints(v) for v in value]
    return value
