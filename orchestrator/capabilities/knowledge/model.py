"""What a knowledge record is: its limits, its frontmatter model, the result types and the error.

Pure definitions with no I/O: :class:`KnowledgeFrontmatter` validates a record's YAML
frontmatter, :class:`KnowledgeRecord`, :class:`LintIssue`, :class:`ResidentKnowledge` and
:class:`SearchHit` are what the rest of the package returns, :func:`slug_problem` says whether a
name may be a record's slug, and :class:`KnowledgeError` is the one exception the package raises.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictBool, StrictStr
from pydantic_core import PydanticCustomError

from orchestrator.errors import PodRuntimeError

KNOWLEDGE_DIR = "knowledge"
DESCRIPTION_MAX_CHARS = 1024
SLUG_MAX_CHARS = 64
RECORD_MAX_BYTES = 256 * 1024
"""Records larger than this are rejected rather than silently cut."""
MAX_RECORDS = 10_000

_SLUG_RE = re.compile(r"[a-z0-9][a-z0-9_-]*")

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
