"""Parsing one record file: split off the YAML frontmatter, validate it, report every problem.

:func:`parse_file` reads one file through a :class:`~orchestrator.adapters.scoped_fs.ScopedFS` and never
raises for a bad file: it returns a :class:`Parsed` holding the record when usable and every
:class:`~orchestrator.capabilities.knowledge.model.LintIssue` found on the way (with 1-based lines where they
are known), so lint can report everything in one pass. :func:`load_record` is the raising form.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from orchestrator.adapters.scoped_fs import FsError, ScopedFS
from orchestrator.capabilities.knowledge.model import (
    DESCRIPTION_MAX_CHARS,
    RECORD_MAX_BYTES,
    KnowledgeError,
    KnowledgeFrontmatter,
    KnowledgeRecord,
    LintIssue,
    slug_problem,
)

_LEADING_BLANK_LINES = re.compile(r"\A(?:[ \t]*\r?\n)+")


@dataclass(slots=True)
class Parsed:
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


def _parse_text(path: Path, text: str) -> Parsed:
    def error(message: str, line: int | None = None) -> Parsed:
        return Parsed(None, [LintIssue(path, line, "error", message)])

    split = _split_frontmatter(text)
    if isinstance(split, str):
        return error(split, 1)
    yaml_text, body, first_line = split
    # Imported on the first record read: every pod imports this module (its system prompt
    # lists the records), and a workspace without records should not pay for the parser
    # on its way to the first request (docs/performance.md).
    import yaml

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
        return Parsed(None, issues)

    body = _LEADING_BLANK_LINES.sub("", body).rstrip()
    return Parsed(KnowledgeRecord(path.stem, path, frontmatter, body), issues)


def parse_file(fs: ScopedFS, path: Path) -> Parsed:
    """Read and parse one file, checking its slug; never raises for a bad file."""
    path = Path(path)
    parsed = _read_and_parse(fs, path)
    problem = slug_problem(path.stem)
    if problem is not None:
        # The content is still checked, so lint reports everything in one pass.
        return Parsed(None, [LintIssue(path, None, "error", problem), *parsed.issues])
    return parsed


def _read_and_parse(fs: ScopedFS, path: Path) -> Parsed:
    try:
        file = fs.read_text(path, max_bytes=RECORD_MAX_BYTES)
    except FsError as exc:
        return Parsed(None, [LintIssue(path, None, "error", f"cannot read: {exc.reason}")])
    if file.truncated:
        message = f"file is {file.total_bytes} bytes; records are limited to {RECORD_MAX_BYTES}"
        return Parsed(None, [LintIssue(path, None, "error", message)])
    return _parse_text(path, file.text)


def first_error(parsed: Parsed) -> LintIssue:
    return next(issue for issue in parsed.issues if issue.severity == "error")


def issue_from(exc: KnowledgeError) -> LintIssue:
    return LintIssue(exc.path or Path(), exc.line, "error", str(exc))


def load_record(fs: ScopedFS, path: Path) -> KnowledgeRecord:
    """Read and validate one record; raises :class:`KnowledgeError` naming the first problem."""
    parsed = parse_file(fs, path)
    if parsed.record is None:
        issue = first_error(parsed)
        raise KnowledgeError(issue.message, path=issue.path, line=issue.line)
    return parsed.record
