"""Segments: the parts of a user submit (text, pastes, ``@file`` and ``@knowledge`` refs).

Both sides of the socket use these models: the protocol carries them in ``run``, history keeps
them on the user message, and clients draw them. Unknown kinds parse into
:class:`UnknownSegment`, so a newer client still works with an older pod.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, model_validator


class _Segment(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


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
    """An ``@path`` reference, resolved at submit time through the scoped file system."""

    kind: Literal["file_ref"] = "file_ref"
    path: str


class KnowledgeRefSegment(_Segment):
    """A reference to a ``knowledge/<slug>.md`` record."""

    kind: Literal["knowledge_ref"] = "knowledge_ref"
    slug: str


class WorkflowInvokeSegment(_Segment):
    """An invocation of a named workflow."""

    kind: Literal["workflow_invoke"] = "workflow_invoke"
    slug: str


class UnknownSegment(BaseModel):
    """A segment kind this pod does not know; kept whole so newer clients still work."""

    model_config = ConfigDict(extra="allow", frozen=True)

    kind: str

    @model_validator(mode="after")
    def _not_a_known_kind(self) -> UnknownSegment:
        if self.kind in KNOWN_SEGMENT_KINDS:
            raise ValueError(f"malformed {self.kind!r} segment")
        return self


KNOWN_SEGMENT_KINDS = frozenset({"text", "paste", "file_ref", "knowledge_ref", "workflow_invoke"})

KnownSegment = Annotated[
    TextSegment | PasteSegment | FileRefSegment | KnowledgeRefSegment | WorkflowInvokeSegment,
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


def flatten_segments(segments: list[Segment]) -> str:
    """The text the model sees for a user message: refs stay as readable placeholders."""
    parts: list[str] = []
    for seg in segments:
        if isinstance(seg, TextSegment | PasteSegment):
            parts.append(seg.text)
        elif isinstance(seg, FileRefSegment):
            parts.append(f"@{seg.path}")
        elif isinstance(seg, KnowledgeRefSegment):
            parts.append(f"@knowledge:{seg.slug}")
        elif isinstance(seg, WorkflowInvokeSegment):
            parts.append(f"/{seg.slug}")
        else:
            parts.append(f"[unsupported segment: {seg.kind}]")
    return "".join(parts)
