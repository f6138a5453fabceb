"""How the fake API counts tokens and sees a request's prompt: one block after another.

The real tokenizer is not public, so the fake uses one documented, deterministic counter
that tests and benchmarks can compute themselves::

    tokens(block) = ceil(len(canonical JSON of the block, in UTF-8 bytes) / 4) + 3

where the canonical JSON is ``json.dumps(block, sort_keys=True, separators=(",", ":"),
ensure_ascii=False)`` of the block **without** its ``cache_control``, and the 3 stands for
the per-block framing a real tokenizer adds. A request's input tokens are the sum over its
prompt blocks, which the API reads in this order (the same order the prompt cache uses):

1. each tool definition of ``tools``, one block each;
2. ``system``: a string is one text block, a list is one block per element;
3. each message's content: a string is one text block, a list one block per element.

Output tokens are counted the same way over the reply's content blocks.

An ``image`` block is counted by its pixels, as the API documents: ``width * height / 750``
after scaling the long edge down to 1568 px, plus the framing
(:func:`orchestrator.core.images.image_tokens`). A PDF ``document`` block is counted by its pages,
:data:`orchestrator.core.documents.PDF_PAGE_TOKENS` each (the API reads a page's text and an image
of it), plus the framing.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from orchestrator.core.documents import PDF_MEDIA_TYPE, base64_document_tokens
from orchestrator.core.images import base64_image_tokens

__all__ = [
    "BLOCK_OVERHEAD_TOKENS",
    "BYTES_PER_TOKEN",
    "PromptBlock",
    "canonical_block",
    "count_block_tokens",
    "count_input_tokens",
    "count_output_tokens",
    "prompt_blocks",
]

BYTES_PER_TOKEN = 4
"""UTF-8 bytes of a block's canonical JSON per token (rounded up)."""
BLOCK_OVERHEAD_TOKENS = 3
"""Tokens added for every block, whatever its size."""

Section = Literal["tools", "system", "user", "assistant"]
_UNCACHEABLE = frozenset({"thinking", "redacted_thinking"})


def canonical_block(block: Mapping[str, Any]) -> str:
    """The block as the counter and the cache see it: sorted JSON without ``cache_control``."""
    bare = {key: value for key, value in block.items() if key != "cache_control"}
    return json.dumps(bare, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _tokens(canonical: str) -> int:
    return math.ceil(len(canonical.encode()) / BYTES_PER_TOKEN) + BLOCK_OVERHEAD_TOKENS


def _media(block: Any) -> bool:
    """Whether a block is counted by what it shows (an image, a PDF) rather than its JSON."""
    if not isinstance(block, Mapping):
        return False
    source = block.get("source")
    return block.get("type") == "image" or (
        block.get("type") == "document"
        and isinstance(source, Mapping)
        and source.get("type") == "base64"
        and source.get("media_type") == PDF_MEDIA_TYPE
    )


def count_block_tokens(block: Mapping[str, Any]) -> int:
    """The tokens of one block (a content block, a system block or a tool definition)."""
    if _media(block):
        source = block.get("source") or {}
        data = str(source.get("data", ""))
        if block.get("type") == "document":
            return base64_document_tokens(data) + BLOCK_OVERHEAD_TOKENS
        return base64_image_tokens(data) + BLOCK_OVERHEAD_TOKENS
    content = block.get("content")
    if block.get("type") == "tool_result" and isinstance(content, list):
        # Its images and PDFs are counted by what they show, like anywhere else.
        media = [b for b in content if _media(b)]
        if media:
            rest = {**block, "content": [b for b in content if not _media(b)]}
            return _tokens(canonical_block(rest)) + sum(count_block_tokens(b) for b in media)
    return _tokens(canonical_block(block))


@dataclass(frozen=True, slots=True)
class PromptBlock:
    """One block of a request's prompt, in the order the API reads it."""

    section: Section
    """``tools``, ``system``, or the role of the message it belongs to."""
    location: str
    """Where the block is in the request body, as the API names it: ``messages.2.content.0``."""
    block: Mapping[str, Any]
    tokens: int
    prefix_hash: str
    """A hash of every block up to and including this one (``cache_control`` left out)."""

    @property
    def cacheable(self) -> bool:
        """Whether the block can end a cached prefix (thinking blocks cannot)."""
        return self.block.get("type") not in _UNCACHEABLE

    @property
    def cache_control(self) -> Any:
        """The block's ``cache_control`` as sent, or ``None``."""
        return self.block.get("cache_control")


def _as_block(content: Any) -> Mapping[str, Any]:
    if isinstance(content, Mapping):
        return content
    return {"type": "text", "text": content if isinstance(content, str) else str(content)}


def _raw_blocks(body: Mapping[str, Any]) -> list[tuple[Section, str, Mapping[str, Any]]]:
    out: list[tuple[Section, str, Mapping[str, Any]]] = []
    tools = body.get("tools")
    if isinstance(tools, Sequence) and not isinstance(tools, str):
        out += [("tools", f"tools.{i}", _as_block(tool)) for i, tool in enumerate(tools)]
    system = body.get("system")
    if isinstance(system, str):
        if system:
            out.append(("system", "system", _as_block(system)))
    elif isinstance(system, Sequence):
        out += [("system", f"system.{i}", _as_block(block)) for i, block in enumerate(system)]
    for m, message in enumerate(body.get("messages") or []):
        if not isinstance(message, Mapping):
            continue
        role: Section = "assistant" if message.get("role") == "assistant" else "user"
        content = message.get("content")
        if isinstance(content, str):
            out.append((role, f"messages.{m}.content", _as_block(content)))
        elif isinstance(content, Sequence):
            out += [
                (role, f"messages.{m}.content.{i}", _as_block(block))
                for i, block in enumerate(content)
            ]
    return out


def prompt_blocks(body: Mapping[str, Any]) -> list[PromptBlock]:
    """The request's prompt as blocks, tools → system → messages, with prefix hashes."""
    digest = hashlib.sha256()
    blocks: list[PromptBlock] = []
    for section, location, block in _raw_blocks(body):
        canonical = canonical_block(block)
        # The section is part of the prefix: the same text as system or as a message differs.
        digest.update(section.encode() + b"\0" + canonical.encode() + b"\0")
        blocks.append(PromptBlock(section, location, block, _tokens(canonical), digest.hexdigest()))
    return blocks


def count_input_tokens(body: Mapping[str, Any]) -> int:
    """A request's input tokens: every tool, system and message block (what count_tokens says)."""
    return sum(block.tokens for block in prompt_blocks(body))


def count_output_tokens(content: Sequence[Mapping[str, Any]]) -> int:
    """A reply's output tokens: its content blocks, counted like input blocks (at least 1)."""
    return max(1, sum(count_block_tokens(block) for block in content))
