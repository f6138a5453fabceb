"""The knowledge folder as a store: where records live, listing them, and the reads the pod makes.

:func:`record_files` lists ``knowledge/*.md`` under the memory root;
:func:`collect_resident_knowledge` gathers the resident descriptions for the system prompt,
:func:`search_knowledge` ranks records against a query for ``knowledge_search``,
:func:`read_memory` returns one body for ``memory_read``, and :func:`resolve_knowledge_refs`
turns ``@knowledge:`` refs into system messages. Every read goes through a
:class:`~orchestrator.adapters.scoped_fs.ScopedFS` rooted at the memory root.
"""

from __future__ import annotations

import difflib
from pathlib import Path

from orchestrator.adapters.scoped_fs import FsError, NotFound, ScopedFS
from orchestrator.capabilities.knowledge.model import (
    KNOWLEDGE_DIR,
    MAX_RECORDS,
    KnowledgeError,
    LintIssue,
    ResidentEntry,
    ResidentKnowledge,
    SearchHit,
    fold_lines,
    slug_problem,
)
from orchestrator.capabilities.knowledge.parse import (
    first_error,
    issue_from,
    load_record,
    parse_file,
)
from orchestrator.core.history import SystemMessage
from orchestrator.core.tool_output import utf8_cut


def knowledge_dir(memory_root: Path) -> Path:
    """The folder that holds the records."""
    return memory_root / KNOWLEDGE_DIR


def memory_fs(memory_root: Path) -> ScopedFS:
    """A scope rooted at the memory root (which may lie outside the workspace); used to read."""
    return ScopedFS(memory_root)


def record_files(fs: ScopedFS, memory_root: Path) -> list[Path]:
    """The ``*.md`` files directly in ``knowledge/`` (hidden ones aside), sorted by name.

    Empty when the folder is absent; raises :class:`KnowledgeError` when it cannot be listed.
    """
    folder = knowledge_dir(memory_root)
    # Not ScopedFS.list_dir: it hides .gitignore-d entries, and a private knowledge/ folder is
    # often git-ignored; it also leaves out links that leave the root, which lint must report.
    # Every file is then read through ``fs``, so such a link is reported rather than followed.
    try:
        entries = fs.scan_dir(folder)
    except NotFound:
        return []
    except FsError as exc:
        raise KnowledgeError(f"cannot list {KNOWLEDGE_DIR}/: {exc.reason}", path=folder) from None
    names = [
        entry.name
        for entry in entries
        if entry.name.endswith(".md") and not entry.name.startswith(".") and not entry.is_dir
    ]
    return [folder / name for name in sorted(names)[:MAX_RECORDS]]


def collect_resident_knowledge(fs: ScopedFS, memory_root: Path) -> ResidentKnowledge:
    """Records with ``model_invokation: true``, by slug; unusable files are skipped and listed."""
    entries: list[ResidentEntry] = []
    skipped: list[LintIssue] = []
    try:
        paths = record_files(fs, memory_root)
    except KnowledgeError as exc:
        return ResidentKnowledge([], [issue_from(exc)])
    for path in paths:
        parsed = parse_file(fs, path)
        if parsed.record is None:
            skipped.append(first_error(parsed))
        elif parsed.record.frontmatter.model_invokation:
            description = fold_lines(parsed.record.frontmatter.description)
            entries.append(ResidentEntry(parsed.record.slug, description))
    entries.sort(key=lambda entry: entry.slug)
    return ResidentKnowledge(entries, skipped)


# Where a term is found decides how much it counts: a slug hit is the strongest signal.
_SLUG_WEIGHT = 3
_SUMMARY_WEIGHT = 2
_BODY_WEIGHT = 1


def _terms(query: str) -> list[str]:
    return list(dict.fromkeys(query.lower().split()))


def search_knowledge(
    fs: ScopedFS, memory_root: Path, query: str, limit: int = 10
) -> list[SearchHit]:
    """Records matching any query term (case-insensitive), most terms matched first.

    Within the same number of matched terms, hits in the slug outrank hits in the description
    (and title and tags), which outrank hits in the body; ties go by slug. Unusable files are
    skipped.
    """
    terms = _terms(query)
    if not terms:
        raise KnowledgeError("the search query is empty")
    if limit < 1:
        raise KnowledgeError(f"limit must be at least 1, got {limit}")
    ranked: list[tuple[int, int, SearchHit]] = []
    for path in record_files(fs, memory_root):
        record = parse_file(fs, path).record
        if record is None:
            continue
        front = record.frontmatter
        summary = " ".join([front.description, front.title or "", *front.tags]).lower()
        body = record.body.lower()
        slug = record.slug.lower()
        matched = 0
        score = 0
        for term in terms:
            term_score = (
                _SLUG_WEIGHT * (term in slug)
                + _SUMMARY_WEIGHT * (term in summary)
                + _BODY_WEIGHT * (term in body)
            )
            matched += term_score > 0
            score += term_score
        if matched:
            hit = SearchHit(
                record.slug, fold_lines(front.description), score, front.model_invokation
            )
            ranked.append((matched, score, hit))
    ranked.sort(key=lambda item: (-item[0], -item[1], item[2].slug))
    return [hit for _, _, hit in ranked[:limit]]


def read_memory(fs: ScopedFS, memory_root: Path, slug: str) -> str:
    """The body of record ``slug``; raises :class:`KnowledgeError` if it is absent or bad."""
    # Validating first also keeps a slug like "../secrets" from naming a path.
    problem = slug_problem(slug)
    if problem is not None:
        raise KnowledgeError(problem)
    path = knowledge_dir(memory_root) / f"{slug}.md"
    try:
        fs.resolve_read(path)
    except NotFound:
        message = f"no knowledge record {slug!r}"
        known = [p.stem for p in record_files(fs, memory_root)]
        close = difflib.get_close_matches(slug, known, n=3, cutoff=0.6)
        if close:
            message += f"; similar: {', '.join(close)}"
        raise KnowledgeError(message, path=path) from None
    except FsError as exc:
        raise KnowledgeError(f"cannot read record {slug!r}: {exc.reason}", path=path) from None
    return load_record(fs, path).body


KNOWLEDGE_REF_ORIGIN = "knowledge_ref"


def resolve_knowledge_refs(
    memory_root: Path, slugs: list[str], *, max_bytes: int
) -> tuple[list[SystemMessage], list[str]]:
    """``[Knowledge: <slug>]\\n<body>`` system messages for ``@knowledge:`` refs, and failures.

    Bodies are capped like ``@file`` refs (cut on a character boundary, with a marker that
    points at ``memory_read``); each failure is a one-line reason for a ``warn`` alert.
    """
    fs = memory_fs(memory_root)
    items: list[SystemMessage] = []
    failures: list[str] = []
    for slug in dict.fromkeys(slugs):
        try:
            body = read_memory(fs, memory_root, slug)
        except (KnowledgeError, FsError) as exc:
            failures.append(f"could not attach @knowledge:{slug}: {exc}")
            continue
        data = body.encode("utf-8")
        if len(data) > max_bytes:
            kept = data[: utf8_cut(data, max_bytes)].decode("utf-8")
            body = f"{kept}\n[...truncated, {len(data)} bytes total — use memory_read for the rest]"
        items.append(
            SystemMessage(text=f"[Knowledge: {slug}]\n{body}", origin=KNOWLEDGE_REF_ORIGIN)
        )
    return items, failures
