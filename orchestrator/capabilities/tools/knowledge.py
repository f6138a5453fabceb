"""``knowledge_search`` and ``memory_read``: the model's way into ``knowledge/*.md``.

The system prompt names these two tools, so their names are part of the prompt contract.
Both read through a scope over the memory root alone: the memory root may lie outside the
workspace, and these tools must not widen what the model can read beyond ``knowledge/``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated

from pydantic import Field, StringConstraints

from orchestrator.capabilities.knowledge import (
    KnowledgeError,
    memory_fs,
    read_memory,
    search_knowledge,
)
from orchestrator.capabilities.tools.arguments import ToolArgs, TypedTool
from orchestrator.capabilities.tools.base import ToolContext, ToolError, ToolOutput

SEARCH_DEFAULT_LIMIT = 10
SEARCH_MAX_LIMIT = 50

Words = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
"""A string with something besides blanks in it, taken without the blanks around it."""


class KnowledgeSearchArgs(ToolArgs):
    """``knowledge_search``'s arguments."""

    query: Words = Field(description="Keywords separated by spaces.")
    limit: int = Field(
        SEARCH_DEFAULT_LIMIT,
        ge=1,
        # More than the maximum is shortened to it, not refused.
        json_schema_extra={"maximum": SEARCH_MAX_LIMIT},
        description="The most records to return.",
    )


class KnowledgeSearchTool(TypedTool[KnowledgeSearchArgs]):
    """Find knowledge records by case-insensitive terms over slug, description and body."""

    name = "knowledge_search"
    claude_code_name = None
    acp_kind = "search"
    side_effects = False
    kind = "read"
    description = (
        "Search the knowledge records (knowledge/*.md) by keywords. Matches any term, "
        "case-insensitively, in a record's slug, description and body; returns the best "
        "matches as `slug: description`. Read a record in full with memory_read."
    )
    args_model = KnowledgeSearchArgs

    def __init__(self, memory_root: Path) -> None:
        super().__init__()
        self.memory_root = memory_root

    async def execute(self, args: KnowledgeSearchArgs, ctx: ToolContext) -> ToolOutput:
        """Search and list the matches, best first."""
        query, limit = args.query, min(args.limit, SEARCH_MAX_LIMIT)
        try:
            # Search reads every record; keep the event loop free while it does.
            hits = await asyncio.to_thread(
                search_knowledge, memory_fs(self.memory_root), self.memory_root, query, limit
            )
        except KnowledgeError as exc:
            raise ToolError(str(exc)) from None
        if not hits:
            return ToolOutput(summary=f"knowledge_search: no records match {query!r}")
        noun = "record" if len(hits) == 1 else "records"
        lines = [f"- {hit.slug}: {hit.description}" for hit in hits]
        return ToolOutput(
            summary=f"knowledge_search: {len(hits)} {noun} for {query!r}",
            content="\n".join(lines),
        )


class MemoryReadArgs(ToolArgs):
    """``memory_read``'s arguments."""

    slug: Words = Field(description="The record's slug, e.g. `release-steps`.")


class MemoryReadTool(TypedTool[MemoryReadArgs]):
    """Read the full body of one knowledge record by slug."""

    name = "memory_read"
    claude_code_name = None
    acp_kind = "read"
    side_effects = False
    kind = "read"
    description = (
        "Read the full body of a knowledge record by its slug (the file name of "
        "knowledge/<slug>.md without the extension), as listed under Resident knowledge "
        "or returned by knowledge_search."
    )
    args_model = MemoryReadArgs

    def __init__(self, memory_root: Path) -> None:
        super().__init__()
        self.memory_root = memory_root

    async def execute(self, args: MemoryReadArgs, ctx: ToolContext) -> ToolOutput:
        """Return the record's body; its frontmatter is left out."""
        slug = args.slug.removesuffix(".md")
        try:
            body = await asyncio.to_thread(
                read_memory, memory_fs(self.memory_root), self.memory_root, slug
            )
        except KnowledgeError as exc:
            raise ToolError(str(exc)) from None
        count = len(body.splitlines())
        noun = "line" if count == 1 else "lines"
        return ToolOutput(summary=f"memory_read: {slug} — {count} {noun}", content=body)
