"""Linting the knowledge folder: every problem in every record, as values rather than raises.

:func:`lint_knowledge` parses each ``knowledge/*.md`` file, adds duplicate-slug errors (slugs
ignore case), and returns the issues in file order; ``pod knowledge lint`` prints them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from orchestrator.adapters.scoped_fs import ScopedFS
from orchestrator.capabilities.knowledge.model import KnowledgeError, LintIssue
from orchestrator.capabilities.knowledge.parse import issue_from, parse_file
from orchestrator.capabilities.knowledge.store import memory_fs, record_files


def _duplicate_issues(paths: Sequence[Path]) -> list[LintIssue]:
    seen: dict[str, Path] = {}
    issues = []
    for path in paths:
        key = path.stem.lower()
        if key in seen:
            message = f"duplicate slug {key!r}: also {seen[key].name} (slugs ignore case)"
            issues.append(LintIssue(path, None, "error", message))
        else:
            seen[key] = path
    return issues


def lint_knowledge(memory_root: Path, fs: ScopedFS | None = None) -> list[LintIssue]:
    """Every problem in ``knowledge/*.md``, in file order; empty when clean or absent."""
    fs = fs or memory_fs(memory_root)
    try:
        paths = record_files(fs, memory_root)
    except KnowledgeError as exc:
        return [issue_from(exc)]
    issues: list[LintIssue] = []
    for path in paths:
        issues.extend(parse_file(fs, path).issues)
    issues.extend(_duplicate_issues(paths))
    order = {path: index for index, path in enumerate(paths)}
    issues.sort(key=lambda issue: (order.get(issue.path, -1), issue.line or 0))
    return issues
