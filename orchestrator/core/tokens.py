"""Estimating tokens without a tokenizer: sizes the pod plans with before the API counts.

Claude's tokenizer is not public, so the pod estimates from UTF-8 size: about 3.5 bytes per
token for English and code, slightly more tokens than that for dense text, which is the safe
side for a budget. The context module calibrates the estimate with the real counts the API
reports (``usage``) after each request, so the error does not grow with the session.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import Any

from orchestrator.core.documents import PDF_MEDIA_TYPE, base64_document_tokens
from orchestrator.core.images import base64_image_tokens

BYTES_PER_TOKEN = 3.5
BLOCK_OVERHEAD = 4
"""Tokens the API spends on each block's framing (role, type markers)."""


def estimate_text(text: str) -> int:
    """Tokens of a piece of text."""
    return math.ceil(len(text.encode("utf-8", "replace")) / BYTES_PER_TOKEN)


def estimate_block(block: dict[str, Any]) -> int:
    """Tokens of one content block, framing included."""
    kind = block.get("type")
    if kind == "text":
        body = str(block.get("text", ""))
    elif kind == "tool_result":
        content = block.get("content")
        if isinstance(content, list):  # text, image, document blocks: each counted as the API does
            return sum(estimate_block(b) for b in content if isinstance(b, dict)) + BLOCK_OVERHEAD
        body = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    elif kind == "thinking":
        body = str(block.get("thinking", "")) + str(block.get("signature", ""))
    elif kind == "redacted_thinking":
        body = str(block.get("data", ""))
    elif kind == "image":
        # Counted by its pixels, as the API does: its base64 would be a thousand times more.
        source = block.get("source") or {}
        return base64_image_tokens(str(source.get("data", ""))) + BLOCK_OVERHEAD
    elif kind == "document" and _source(block).get("media_type") == PDF_MEDIA_TYPE:
        # Counted by its pages (their text and an image of each), not by its base64.
        return base64_document_tokens(str(_source(block).get("data", ""))) + BLOCK_OVERHEAD
    else:
        body = json.dumps(
            {k: v for k, v in block.items() if k != "cache_control"}, ensure_ascii=False
        )
    return estimate_text(body) + BLOCK_OVERHEAD


def _source(block: dict[str, Any]) -> dict[str, Any]:
    source = block.get("source")
    return source if isinstance(source, dict) else {}


def estimate_message(message: dict[str, Any]) -> int:
    """Tokens of one message."""
    content = message.get("content")
    if isinstance(content, str):
        return estimate_text(content) + BLOCK_OVERHEAD
    return sum(estimate_block(b) for b in content or [] if isinstance(b, dict))


def estimate_request(
    system: str, tools: Iterable[dict[str, Any]], messages: Iterable[dict[str, Any]]
) -> int:
    """Tokens of a whole request: tools, system prompt and messages."""
    total = estimate_text(system) + BLOCK_OVERHEAD if system else 0
    total += sum(_tool_tokens(tool) for tool in tools)
    return total + sum(estimate_message(m) for m in messages)


_TOOL_TOKENS: dict[tuple[str, str, int], tuple[object, int]] = {}


def _tool_tokens(tool: dict[str, Any]) -> int:
    # Every request carries the same tool specs (the same schema objects): encoding each to
    # JSON once instead of once per request was a third of a round's time at 1,000 items.
    schema = tool.get("input_schema")
    key = (str(tool.get("name")), str(tool.get("description")), id(schema))
    cached = _TOOL_TOKENS.get(key)
    if cached is not None and cached[0] is schema:
        return cached[1]
    tokens = estimate_text(json.dumps(tool, ensure_ascii=False))
    if len(_TOOL_TOKENS) > 1024:
        _TOOL_TOKENS.clear()
    _TOOL_TOKENS[key] = (schema, tokens)
    return tokens


class MessageTokens:
    """:func:`estimate_message` summed over a conversation that grows at its end, in time
    proportional to what changed.

    The wire builder hands out the same message objects for the unchanged part of a
    conversation and only rebuilds a suffix (the last message absorbs new results; a moved
    prune bound or a compaction rebuilds from where it changed). So when the message before
    the last one of the previous call is the very same object at the same place, everything
    before it is too, and its running total is reused. A round then costs the same at 10 and
    at 10,000 messages.
    """

    def __init__(self) -> None:
        self._messages: list[dict[str, Any]] = []
        self._totals: list[int] = [0]
        """``_totals[i]``: the tokens of ``_messages[:i]``."""

    def __call__(self, messages: list[dict[str, Any]]) -> int:
        """The tokens of ``messages``."""
        keep = 0
        pivot = len(self._messages) - 2
        if 0 <= pivot < len(messages) and messages[pivot] is self._messages[pivot]:
            keep = pivot + 1
        totals = self._totals[: keep + 1]
        for message in messages[keep:]:
            totals.append(totals[-1] + estimate_message(message))
        self._messages = list(messages)
        self._totals = totals
        return totals[-1]

    def request(
        self, system: str, tools: list[dict[str, Any]], messages: list[dict[str, Any]]
    ) -> int:
        """:func:`estimate_request`, with the messages counted incrementally."""
        return estimate_request(system, tools, []) + self(messages)
