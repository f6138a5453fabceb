"""Knowledge records: ``knowledge/<slug>.md`` under the memory root, YAML frontmatter first.

A record looks like::

    ---
    description: One line the model sees when the record is resident.
    model_invokation: true
    title: Optional title
    tags: [optional, list]
    ---
    The body, read in full through ``memory_read``.

``model_invokation`` keeps its historical spelling: it is the wire name existing records use.
Records with ``model_invokation: true`` are *resident*: their descriptions are listed in the
system prompt. Every read goes through a :class:`~orchestrator.adapters.scoped_fs.ScopedFS`.

Errors: :class:`KnowledgeError` is the one exception this package raises (a bad record, an
unknown slug, an empty query); :func:`lint_knowledge` reports problems as values instead.

The package is split by job: :mod:`~orchestrator.capabilities.knowledge.model` (limits, frontmatter model,
result types, the error), :mod:`~orchestrator.capabilities.knowledge.parse` (one file to a record and its
issues), :mod:`~orchestrator.capabilities.knowledge.store` (listing, the resident collector, search, reads
and ``@knowledge:`` refs) and :mod:`~orchestrator.capabilities.knowledge.lint`. Import from here.
"""

from __future__ import annotations

from orchestrator.capabilities.knowledge.lint import (
    lint_knowledge,
)
from orchestrator.capabilities.knowledge.model import (
    DESCRIPTION_MAX_CHARS,
    KNOWLEDGE_DIR,
    MAX_RECORDS,
    RECORD_MAX_BYTES,
    SLUG_MAX_CHARS,
    KnowledgeError,
    KnowledgeFrontmatter,
    KnowledgeRecord,
    LintIssue,
    ResidentEntry,
    ResidentKnowledge,
    SearchHit,
    Severity,
    fold_lines,
    slug_problem,
)
from orchestrator.capabilities.knowledge.parse import (
    load_record,
)
from orchestrator.capabilities.knowledge.store import (
    KNOWLEDGE_REF_ORIGIN,
    collect_resident_knowledge,
    knowledge_dir,
    memory_fs,
    read_memory,
    record_files,
    resolve_knowledge_refs,
    search_knowledge,
)

__all__ = [
    "DESCRIPTION_MAX_CHARS",
    "KNOWLEDGE_DIR",
    "KNOWLEDGE_REF_ORIGIN",
    "MAX_RECORDS",
    "RECORD_MAX_BYTES",
    "SLUG_MAX_CHARS",
    "KnowledgeError",
    "KnowledgeFrontmatter",
    "KnowledgeRecord",
    "LintIssue",
    "ResidentEntry",
    "ResidentKnowledge",
    "SearchHit",
    "Severity",
    "collect_resident_knowledge",
    "fold_lines",
    "knowledge_dir",
    "lint_knowledge",
    "load_record",
    "memory_fs",
    "read_memory",
    "record_files",
    "resolve_knowledge_refs",
    "search_knowledge",
    "slug_problem",
]
