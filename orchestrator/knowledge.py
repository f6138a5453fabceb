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
system prompt. Every read goes through a :class:`~orchestrator.scoped_fs.ScopedFS`.

Errors: :class:`KnowledgeError` is the one exception this module raises (a bad record, an
unknown slug, an empty query); :func:`lint_knowledge` reports problems as values instead.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictStr,
    ValidationError,
)
from pydantic_core import ErrorDetails, PydanticCustomError

from orchestrator.errors import PodRuntimeError
from orchestrator.history import SystemMessage
from orchestrator.scoped_fs import FsError, NotFound, ScopedFS
from orchestrator.tool_output import utf8_cut

KNOWLEDGE_DIR = "knowledge"
DESCRIPTION_MAX_CHARS = 1024
SLUG_MAX_CHARS = 64
RECORD_MAX_BYTES = 256 * 1024
"""Records larger than this are rejected rather than silently cut."""
MAX_RECORDS = 10_000

_SLUG_RE = re.compile(r"[a-z0-9][a-z0-9_-]*")
_LEADING_BLANK_LINES = re.compile(r"\A(?:[ \t]*\r?\n)+")

Severity = Literal["error", "warning"]


class KnowledgeError(PodRuntimeError):
    """A record cannot be used, or a knowledge request is invalid; ``str()`` says why."""

    def __init__(self, message: str, *, path: Path | None = None, line: int | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.line = line


def _not_blank(value: str) -> str:
    if not value.strip():
        raise PydanticCustomError("blank", "description is empty")
    return value


class KnowledgeFrontmatter(BaseModel):
    """The YAML frontmatter of a record; unknown keys are kept and linted as warnings."""

    # Unknown keys are allowed so a record written for a newer pod still loads; lint flags
    # them because a typo such as ``model_invocation`` silently makes a record non-resident.
    model_config = ConfigDict(extra="allow", frozen=True)

    description: Annotated[
        StrictStr, Field(max_length=DESCRIPTION_MAX_CHARS), AfterValidator(_not_blank)
    ]
    model_invokation: StrictBool = False
    title: StrictStr | None = None
    tags: list[StrictStr] = Field(default_factory=list)


@dataclass(frozen=True, slots=True)
class KnowledgeRecord:
    """One parsed record."""

    slug: str
    path: Path
    frontmatter: KnowledgeFrontmatter
    body: str


@dataclass(frozen=True, slots=True)
class ResidentEntry:
    """A resident record as the system prompt lists it; the description is one line."""

    slug: str
    description: str


@dataclass(frozen=True, slots=True)
class LintIssue:
    """One problem in one file; ``line`` is 1-based when known."""

    path: Path
    line: int | None
    severity: Severity
    message: str

    def shown_path(self, root: Path) -> str:
        """The path relative to ``root`` (``knowledge/x.md``) when it lies inside it."""
        try:
            return self.path.relative_to(root).as_posix()
        except ValueError:
            return str(self.path)

    def location(self, root: Path) -> str:
        """``knowledge/x.md:3``, or without the line when it is unknown."""
        shown = self.shown_path(root)
        return shown if self.line is None else f"{shown}:{self.line}"


@dataclass(frozen=True, slots=True)
class ResidentKnowledge:
    """What the collector found: resident entries in slug order, and the files it skipped."""

    entries: list[ResidentEntry] = field(default_factory=list)
    skipped: list[LintIssue] = field(default_factory=list)
    """The first error of each unusable file, so the pod can raise an alert."""


@dataclass(frozen=True, slots=True)
class SearchHit:
    """A record matching a search, best first."""

    slug: str
    description: str
    score: int
    resident: bool


# -- paths and slugs ----------------------------------------------------------------------------


def knowledge_dir(memory_root: Path) -> Path:
    """The folder that holds the records."""
    return memory_root / KNOWLEDGE_DIR


def memory_fs(memory_root: Path) -> ScopedFS:
    """A scope rooted at the memory root (which may lie outside the workspace); used to read."""
    return ScopedFS(memory_root)


def slug_problem(slug: str) -> str | None:
    """Why ``slug`` is not a valid record name, or None when it is."""
    if len(slug) > SLUG_MAX_CHARS:
        return f"slug {slug!r} is {len(slug)} characters; the limit is {SLUG_MAX_CHARS}"
    if not _SLUG_RE.fullmatch(slug):
        return (
            f"slug {slug!r} is invalid: use lowercase letters, digits, '-' and '_', "
            "starting with a letter or digit"
        )
    return None


def fold_lines(text: str) -> str:
    """Fold CR/LF runs (and the spaces around them) to single spaces, so text stays one line."""
    return re.sub(r"[ \t]*[\r\n]+[ \t]*", " ", text).strip()


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


# -- parsing ------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Parsed:
    """A file's parse: the record when usable, and every issue found on the way."""

    record: KnowledgeRecord | None
    issues: list[LintIssue]


def _split_frontmatter(text: str) -> tuple[str, str, int] | str:
    """``(yaml, body, first_yaml_line)`` or the reason there is no frontmatter."""
    lines = text.removeprefix("\ufeff").splitlines(keepends=True)
    if not lines or lines[0].rstrip() != "---":
        return "missing frontmatter: the file must start with a '---' line"
    for index in range(1, len(lines)):
        if lines[index].rstrip() == "---":
            return "".join(lines[1:index]), "".join(lines[index + 1 :]), 2
    return "frontmatter is not closed: no '---' line after the opening one"


def _key_line(yaml_text: str, key: str, first_line: int) -> int | None:
    """The file line where a top-level ``key:`` appears, for pointing at a bad field."""
    pattern = re.compile(rf"{re.escape(key)}\s*:")
    for offset, line in enumerate(yaml_text.splitlines()):
        if pattern.match(line):
            return first_line + offset
    return None


def _describe(value: Any) -> str:
    shown = repr(value)
    if len(shown) > 40:
        shown = shown[:37] + "..."
    return f"{type(value).__name__} {shown}"


def _field_message(error: ErrorDetails) -> str:
    """A person-sized message for one pydantic error on the frontmatter."""
    loc = error["loc"]
    key = str(loc[0]) if loc else "frontmatter"
    kind = error["type"]
    value = error.get("input")
    if kind == "missing":
        return f"{key} is required"
    if key == "description":
        if kind == "string_too_long" and isinstance(value, str):
            return f"description is {len(value)} characters; the limit is {DESCRIPTION_MAX_CHARS}"
        if kind == "string_type":
            if value is None:
                return "description is empty"
            return f"description must be a string, got {_describe(value)} (quote it)"
        if kind == "blank":
            return "description is empty"
    if key == "model_invokation" and kind == "bool_type":
        return f"model_invokation must be true or false, got {_describe(value)}"
    if key == "title" and kind == "string_type":
        return f"title must be a string, got {_describe(value)}"
    if key == "tags":
        return "tags must be a list of strings"
    return f"{key}: {error['msg']}"


def _unknown_key_warnings(
    path: Path, data: dict[str, Any], yaml_text: str, first_line: int
) -> list[LintIssue]:
    known = list(KnowledgeFrontmatter.model_fields)
    issues = []
    for key in data:
        if key in known:
            continue
        message = f"unknown frontmatter key {key!r}"
        close = difflib.get_close_matches(str(key), known, n=1, cutoff=0.75)
        if close:
            message += f" (did you mean {close[0]!r}?)"
        line = _key_line(yaml_text, str(key), first_line)
        issues.append(LintIssue(path, line, "warning", message))
    return issues


def _parse_text(path: Path, text: str) -> _Parsed:
    def error(message: str, line: int | None = None) -> _Parsed:
        return _Parsed(None, [LintIssue(path, line, "error", message)])

    split = _split_frontmatter(text)
    if isinstance(split, str):
        return error(split, 1)
    yaml_text, body, first_line = split
    try:
        data = yaml.safe_load(yaml_text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = first_line + mark.line if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        return error(f"invalid YAML in frontmatter: {problem}", line)
    if data is None:
        return error("frontmatter is empty: description is required", 1)
    if not isinstance(data, dict):
        return error(f"frontmatter must be a mapping of keys, got {type(data).__name__}", 1)

    issues = _unknown_key_warnings(path, data, yaml_text, first_line)
    try:
        frontmatter = KnowledgeFrontmatter.model_validate(data)
    except ValidationError as exc:
        for detail in exc.errors():
            key = str(detail["loc"][0]) if detail["loc"] else ""
            line = _key_line(yaml_text, key, first_line) if key else None
            issues.append(LintIssue(path, line, "error", _field_message(detail)))
        return _Parsed(None, issues)

    body = _LEADING_BLANK_LINES.sub("", body).rstrip()
    return _Parsed(KnowledgeRecord(path.stem, path, frontmatter, body), issues)


def _parse_file(fs: ScopedFS, path: Path) -> _Parsed:
    """Read and parse one file, checking its slug; never raises for a bad file."""
    path = Path(path)
    parsed = _read_and_parse(fs, path)
    problem = slug_problem(path.stem)
    if problem is not None:
        # The content is still checked, so lint reports everything in one pass.
        return _Parsed(None, [LintIssue(path, None, "error", problem), *parsed.issues])
    return parsed


def _read_and_parse(fs: ScopedFS, path: Path) -> _Parsed:
    try:
        file = fs.read_text(path, max_bytes=RECORD_MAX_BYTES)
    except FsError as exc:
        return _Parsed(None, [LintIssue(path, None, "error", f"cannot read: {exc.reason}")])
    if file.truncated:
        message = f"file is {file.total_bytes} bytes; records are limited to {RECORD_MAX_BYTES}"
        return _Parsed(None, [LintIssue(path, None, "error", message)])
    return _parse_text(path, file.text)


def _first_error(parsed: _Parsed) -> LintIssue:
    return next(issue for issue in parsed.issues if issue.severity == "error")


def _issue_from(exc: KnowledgeError) -> LintIssue:
    return LintIssue(exc.path or Path(), exc.line, "error", str(exc))


def load_record(fs: ScopedFS, path: Path) -> KnowledgeRecord:
    """Read and validate one record; raises :class:`KnowledgeError` naming the first problem."""
    parsed = _parse_file(fs, path)
    if parsed.record is None:
        issue = _first_error(parsed)
        raise KnowledgeError(issue.message, path=issue.path, line=issue.line)
    return parsed.record


# -- collector, search, read --------------------------------------------------------------------


def collect_resident_knowledge(fs: ScopedFS, memory_root: Path) -> ResidentKnowledge:
    """Records with ``model_invokation: true``, by slug; unusable files are skipped and listed."""
    entries: list[ResidentEntry] = []
    skipped: list[LintIssue] = []
    try:
        paths = record_files(fs, memory_root)
    except KnowledgeError as exc:
        return ResidentKnowledge([], [_issue_from(exc)])
    for path in paths:
        parsed = _parse_file(fs, path)
        if parsed.record is None:
            skipped.append(_first_error(parsed))
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
        record = _parse_file(fs, path).record
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


# -- lint ---------------------------------------------------------------------------------------


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
        return [_issue_from(exc)]
    issues: list[LintIssue] = []
    for path in paths:
        issues.extend(_parse_file(fs, path).issues)
    issues.extend(_duplicate_issues(paths))
    order = {path: index for index, path in enumerate(paths)}
    issues.sort(key=lambda issue: (order.get(issue.path, -1), issue.line or 0))
    return issues


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
