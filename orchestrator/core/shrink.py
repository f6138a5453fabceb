"""Shrinking wire messages to a token budget, for a request that must fit (a summary request).

Two moves, both linear in the number of messages: a block bigger than its share of the budget
(a 10 MB attachment, a huge tool result) is cut to its head and tail with a note saying how
much was left out; then the oldest messages are dropped until the rest fits, so that what
remains starts with a user message that carries no tool result, as the API requires.

Pure functions over plain wire dicts; nothing given is mutated.
"""

from __future__ import annotations

import itertools
from typing import Any

from orchestrator.core.tokens import BYTES_PER_TOKEN, estimate_message

Message = dict[str, Any]

BLOCK_SHARE = 4
"""A block may take at most 1/BLOCK_SHARE of the budget before it is cut."""

MIN_BLOCK_TOKENS = 64
"""Below this a cut block would say nothing; a smaller budget keeps at least this much."""


def shrink_messages(messages: list[Message], *, budget: int) -> list[Message]:
    """``messages`` cut and trimmed to fit ``budget`` estimated tokens, where that is possible.

    The result is never empty when ``messages`` holds a user message: at worst it is the last
    valid start, its blocks cut to fit.
    """
    block_cap = max(MIN_BLOCK_TOKENS, budget // BLOCK_SHARE)
    cut = [cut_blocks(m, block_cap) for m in messages]
    sizes = [estimate_message(m) for m in cut]
    # Suffix sums in one pass: the earliest start whose tail fits.
    tails = list(itertools.accumulate(reversed(sizes)))[::-1]
    start = next((i for i, total in enumerate(tails) if total <= budget), len(cut))
    start = _valid_start(cut, start)
    if start < len(cut):
        return cut[start:]
    last = _last_user(cut)
    if last >= len(cut):
        return []
    # Even the last exchange alone is too big: cut its blocks harder, in proportion.
    blocks = sum(_block_count(m) for m in cut[last:]) or 1
    cap = max(MIN_BLOCK_TOKENS, budget // (blocks + 1))
    return [cut_blocks(m, cap) for m in cut[last:]]


def cut_blocks(message: Message, cap_tokens: int) -> Message:
    """The message with every text (and tool result text) longer than ``cap_tokens`` cut to
    its head and tail; the same object when nothing needed cutting."""
    content = message.get("content")
    if isinstance(content, str):
        text = cut_text(content, cap_tokens)
        return message if text is content else {**message, "content": text}
    if not isinstance(content, list):
        return message
    blocks = [_cut_block(b, cap_tokens) for b in content]
    if all(new is old for new, old in zip(blocks, content, strict=True)):
        return message
    return {**message, "content": blocks}


def cut_text(text: str, cap_tokens: int) -> str:
    """``text`` itself when it fits ``cap_tokens``; else its head and tail around a note."""
    cap_bytes = int(cap_tokens * BYTES_PER_TOKEN)
    size = len(text.encode("utf-8", "replace"))
    if size <= cap_bytes:
        return text
    keep = max(0, cap_bytes - 120) // 2
    head = text.encode("utf-8", "replace")[:keep].decode("utf-8", "ignore")
    tail = text.encode("utf-8", "replace")[size - keep :].decode("utf-8", "ignore")
    left_out = size - len(head.encode()) - len(tail.encode())
    return f"{head}\n[… {left_out} bytes left out of this summary request …]\n{tail}"


def _cut_block(block: Any, cap: int) -> Any:
    if not isinstance(block, dict):
        return block
    kind = block.get("type")
    if kind == "text" and "citations" not in block:
        # Cited text is not cut: its citations point into it (the API's, sent back whole).
        text = cut_text(str(block.get("text", "")), cap)
        return block if text is block.get("text") else {**block, "text": text}
    if kind == "tool_result":
        content = block.get("content")
        if isinstance(content, str):
            text = cut_text(content, cap)
            return block if text is content else {**block, "content": text}
        if isinstance(content, list):
            inner = [_cut_block(b, cap) for b in content]
            if any(new is not old for new, old in zip(inner, content, strict=True)):
                return {**block, "content": inner}
    return block


def _valid_start(messages: list[Message], start: int) -> int:
    """The first index at or after ``start`` a request may begin with: a user message that
    answers no tool call (its calls were dropped with the messages before it)."""
    for i in range(start, len(messages)):
        if messages[i]["role"] == "user" and not _has_tool_result(messages[i]):
            return i
    return len(messages)


def _last_user(messages: list[Message]) -> int:
    for i in range(len(messages) - 1, -1, -1):
        if messages[i]["role"] == "user" and not _has_tool_result(messages[i]):
            return i
    return len(messages)


def _has_tool_result(message: Message) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content
    )


def _block_count(message: Message) -> int:
    content = message.get("content")
    return len(content) if isinstance(content, list) else 1
