"""``knowledge_search`` and ``memory_read``: the model's way into ``knowledge/*.md``.

The system prompt names these two tools, so their names are part of the prompt contract.
Both read through a scope over the memory root alone: the memory root may lie outside the
workspace, and these tools must not widen what the model can read beyond ``knowledge/``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from orchestrator.knowledge import (
    KnowledgeError,
    memory_fs,
    read_memory,
    search_knowledge,
)
from orchestrator.tools.base import ToolContext, ToolError, ToolOutput

SEARCH_DEFAULT_LIMIT = 10
SEARCH_MAX_LIMIT = 50


class KnowledgeSearchTool:
    """Find knowledge records by case-insensitive terms over slug, description and body."""

    name: str = "knowledge_search"
    side_effects: bool = False
    description: str = (
        "Search the knowledge records (knowledge/*.md) by keywords. Matches any term, "
        "case-insensitively, in a record's slug, description and body; returns the best "
        "matches as `slug: description`. Read a record in full with memory_read."
    )
    input_schema: dict[str, Any] = {  # noqa: RUF012 - the Tool protocol declares a plain attribute
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "Keywords separated by spaces."},
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": SEARCH_MAX_LIMIT,
                "default": SEARCH_DEFAULT_LIMIT,
                "description": "The most records to return.",
            },
        },
        "required": ["query"],
        "additionalProperties": False,
    }

    def __init__(self, memory_root: Path) -> None:
        self.memory_root = memory_root

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        """Search and list the matches, best first."""
        query = args.get("query")
        if not isinstance(query, str) or not query.strip():
            raise ToolError("knowledge_search: 'query' must be a non-empty string")
        limit = args.get("limit", SEARCH_DEFAULT_LIMIT)
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise ToolError("knowledge_search: 'limit' must be an integer")
        limit = min(max(limit, 1), SEARCH_MAX_LIMIT)
        try:
            # Search reads every record; keep the event loop free while it does.
            hits = await asyncio.to_thread(
                search_knowledge, memory_fs(self.memory_root), self.memory_root, query, limit
            )
        except KnowledgeError as exc:
            raise ToolError(f"knowledge_search: {exc}") from None
        if not hits:
            return ToolOutput(summary=f"knowledge_search: no records match {query.strip()!r}")
        noun = "record" if len(hits) == 1 else "records"
        lines = [f"- {hit.slug}: {hit.description}" for hit in hits]
        return ToolOutput(
            summary=f"knowledge_search: {len(hits)} {noun} for {query.strip()!r}",
            content="\n".join(lines),
        )


class MemoryReadTool:
    """Read the full body of one knowledge record by slug."""

    name: str = "memory_read"
    side_effects: bool = False
    description: str = (
        "Read the full body of a knowledge record by its slug (the file name of "
        "knowledge/<slug>.md without the extension), as listed under Resident knowledge "
        "or returned by knowledge_search."
    )
    input_schema: dict[str, Any] = {  # noqa: RUF012 - the Tool protocol declares a plain attribute
        "type": "object",
        "properties": {
            "slug": {"type": "string", "description": "The record's slug, e.g. `release-steps`."}
        },
        "required": ["slug"],
        "additionalProperties": False,
    }

    def __init__(self, memory_root: Path) -> None:
        self.memory_root = memory_root

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        """Return the record's body; its frontmatter is left out."""
        slug = args.get("slug")
        if not isinstance(slug, str) or not slug.strip():
            raise ToolError("memory_read: 'slug' must be a non-empty string")
        slug = slug.strip().removesuffix(".md")
        try:
            body = await asyncio.to_thread(
                read_memory, memory_fs(self.memory_root), self.memory_root, slug
            )
        except KnowledgeError as exc:
            raise ToolError(f"memory_read: {exc}") from None
        count = len(body.splitlines())
        noun = "line" if count == 1 else "lines"
        return ToolOutput(summary=f"memory_read: {slug} — {count} {noun}", content=body)
