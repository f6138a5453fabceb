"""Segments: the parts of a user submit (text, pastes, ``@file`` and ``@knowledge`` refs).

Both sides of the socket use these models: the protocol carries them in ``run``, history keeps
them on the user message, and clients draw them. Unknown kinds parse into
:class:`UnknownSegment`, so a newer client still works with an older pod.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, model_validator


class _Segment(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class TextSegment(_Segment):
    """Literal text typed by the user."""

    kind: Literal["text"] = "text"
    text: str


class PasteSegment(_Segment):
    """A block pasted into the input; shown to people as a chip, to the model as text."""

    kind: Literal["paste"] = "paste"
    id: int | str
    text: str


class FileRefSegment(_Segment):
    """An ``@path`` reference, resolved at submit time through the scoped file system.

    ``start_line``/``end_line`` narrow it to a range of lines (``@path:L10-L40``), 1-based and
    inclusive; ``end_line`` unset with ``start_line`` set means that one line.
    """

    kind: Literal["file_ref"] = "file_ref"
    path: str
    # Left out of JSON when unset: a whole-file ref reads as it always did on the wire and in
    # session files written before ranges existed.
    start_line: int | None = Field(default=None, ge=1, exclude_if=lambda value: value is None)
    end_line: int | None = Field(default=None, ge=1, exclude_if=lambda value: value is None)

    @model_validator(mode="after")
    def _a_range_runs_forward(self) -> FileRefSegment:
        if self.end_line is not None and (
            self.start_line is None or self.end_line < self.start_line
        ):
            raise ValueError("end_line needs a start_line at or before it")
        return self

    @property
    def lines(self) -> tuple[int, int] | None:
        """The inclusive line range, or None for the whole file."""
        if self.start_line is None:
            return None
        return (self.start_line, self.end_line or self.start_line)

    @property
    def label(self) -> str:
        """The ref as written after ``@``: ``src/a.py`` or ``src/a.py:L10-L40``."""
        return self.path + line_range_suffix(self.lines)


def line_range_suffix(lines: tuple[int, int] | None) -> str:
    """``:L10-L40`` (``:L7`` for one line), or nothing for a whole file."""
    if lines is None:
        return ""
    first, last = lines
    return f":L{first}" if first == last else f":L{first}-L{last}"


class KnowledgeRefSegment(_Segment):
    """A reference to a ``knowledge/<slug>.md`` record."""

    kind: Literal["knowledge_ref"] = "knowledge_ref"
    slug: str


class McpResourceRefSegment(_Segment):
    """A resource of one of the pod's MCP servers (``@mcp:<server>:<uri>``), read when the
    turn starts and attached like a file."""

    kind: Literal["mcp_resource_ref"] = "mcp_resource_ref"
    server: str
    uri: str


class WorkflowInvokeSegment(_Segment):
    """An invocation of a custom slash command (``/<slug> <arguments>``): the pod expands the
    command's file (or MCP prompt) before the prompt is committed; the user message keeps
    this segment, so the line as typed is what a rewind offers back."""

    kind: Literal["workflow_invoke"] = "workflow_invoke"
    slug: str
    # Left out of JSON when empty: an invocation without arguments reads as it always did.
    arguments: str = Field(default="", exclude_if=lambda value: not value)
    """What followed the name, as typed: data for the command's placeholders."""


class UnknownSegment(BaseModel):
    """A segment kind this pod does not know; kept whole so newer clients still work."""

    model_config = ConfigDict(extra="allow", frozen=True)

    kind: str

    @model_validator(mode="after")
    def _not_a_known_kind(self) -> UnknownSegment:
        if self.kind in KNOWN_SEGMENT_KINDS:
            raise ValueError(f"malformed {self.kind!r} segment")
        return self


KNOWN_SEGMENT_KINDS = frozenset(
    {"text", "paste", "file_ref", "knowledge_ref", "mcp_resource_ref", "workflow_invoke"}
)

KnownSegment = Annotated[
    TextSegment
    | PasteSegment
    | FileRefSegment
    | KnowledgeRefSegment
    | McpResourceRefSegment
    | WorkflowInvokeSegment,
    Field(discriminator="kind"),
]


def _segment_tag(value: Any) -> str:
    kind = value.get("kind") if isinstance(value, dict) else getattr(value, "kind", None)
    return "known" if kind in KNOWN_SEGMENT_KINDS else "unknown"


Segment: TypeAlias = Annotated[
    Annotated[KnownSegment, Tag("known")] | Annotated[UnknownSegment, Tag("unknown")],
    Discriminator(_segment_tag),
]
"""Any segment of a ``run``; unknown kinds parse into :class:`UnknownSegment`."""


def ref_label(segment: Segment) -> str | None:
    """How a reference segment reads as text (``@path``, ``@knowledge:slug``, ``/slug``, or a
    placeholder for a kind this side does not know); None for text and pastes.

    The model reads this in the user message, and clients draw the same words on chips.
    """
    if isinstance(segment, TextSegment | PasteSegment):
        return None
    if isinstance(segment, FileRefSegment):
        return f"@{segment.label}"
    if isinstance(segment, KnowledgeRefSegment):
        return f"@knowledge:{segment.slug}"
    if isinstance(segment, McpResourceRefSegment):
        return f"@mcp:{segment.server}:{segment.uri}"
    if isinstance(segment, WorkflowInvokeSegment):
        return f"/{segment.slug} {segment.arguments}" if segment.arguments else f"/{segment.slug}"
    return f"[unsupported segment: {segment.kind}]"


def flatten_segments(segments: list[Segment]) -> str:
    """The text the model sees for a user message: refs stay as readable placeholders."""
    return "".join(
        seg.text if isinstance(seg, TextSegment | PasteSegment) else ref_label(seg) or ""
        for seg in segments
    )
