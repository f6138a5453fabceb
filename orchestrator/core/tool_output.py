"""Shaping tool results for the model: summary always, content capped at one chokepoint.

A tool returns a :class:`ToolOutput` or a plain string; :func:`to_tool_output` turns a string
into one (short strings are summary-only, long ones get a one-line summary plus the text as
content). :func:`cap_content` is the only place that limits ``content``; summaries are never
cut, because they are what remains after pruning.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from orchestrator.core.documents import DocumentData
from orchestrator.core.history import INTERRUPTED_SUMMARY
from orchestrator.core.images import ImageData
from orchestrator.core.limits import TOOL_OUTPUT_MAX_BYTES

SUMMARY_THRESHOLD = 300
"""A string result up to this many UTF-8 bytes is its own summary, with no content."""

SUMMARY_FIRST_LINE_CHARS = 80

__all__ = [
    "SUMMARY_THRESHOLD",
    "TOOL_OUTPUT_MAX_BYTES",
    "ToolOutput",
    "cap_content",
    "interrupted_output",
    "line_count",
    "to_tool_output",
    "truncation_marker",
    "utf8_cut",
]


@dataclass(frozen=True, slots=True)
class ToolOutput:
    """A tool's result: ``summary`` always reaches the model, ``content`` may be pruned.

    Defined here, below every tool, because the pure shaping of results (capping, redaction,
    repair) works on it; :mod:`orchestrator.capabilities.tools.base` offers it with the rest of
    the tool contract."""

    summary: str
    content: str | None = None
    is_error: bool = False
    images: tuple[ImageData, ...] = ()
    """Images the result shows the model (an MCP tool's), sent after the text."""
    documents: tuple[DocumentData, ...] = ()
    """PDFs the result shows the model (an MCP resource's), sent after the images."""


def line_count(text: str) -> int:
    """Lines as an editor counts them: a trailing newline does not start another line."""
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def to_tool_output(value: ToolOutput | str) -> ToolOutput:
    """A tool's return value as a ToolOutput; long strings get a ``<N> lines | …`` summary."""
    if isinstance(value, ToolOutput):
        return value
    if len(value.encode("utf-8")) <= SUMMARY_THRESHOLD:
        return ToolOutput(summary=value)
    first_line = value.split("\n", 1)[0].rstrip("\r")[:SUMMARY_FIRST_LINE_CHARS]
    return ToolOutput(summary=f"{line_count(value)} lines | {first_line}…", content=value)


def utf8_cut(data: bytes, limit: int) -> int:
    """The largest prefix length ``<= limit`` that does not split a UTF-8 character."""
    if limit >= len(data):
        return len(data)
    cut = max(limit, 0)
    # Back up over continuation bytes (10xxxxxx) to the start of the character at the cut.
    while cut > 0 and data[cut] & 0xC0 == 0x80:
        cut -= 1
    return cut


def truncation_marker(dropped: int) -> str:
    """The note appended to capped content; it tells the model how to get the rest."""
    return f"[truncated: {dropped} bytes dropped, refine your query]"


def cap_content(output: ToolOutput, max_bytes: int = TOOL_OUTPUT_MAX_BYTES) -> ToolOutput:
    """Cut ``content`` to at most ``max_bytes`` UTF-8 bytes plus a marker saying how much went."""
    if output.content is None:
        return output
    data = output.content.encode("utf-8")
    if len(data) <= max_bytes:
        return output
    cut = utf8_cut(data, max_bytes)
    kept = data[:cut].decode("utf-8")
    separator = "" if kept.endswith("\n") or not kept else "\n"
    content = f"{kept}{separator}{truncation_marker(len(data) - cut)}"
    return replace(output, content=content)


def interrupted_output(
    elapsed_s: float, partial: list[str], max_bytes: int = TOOL_OUTPUT_MAX_BYTES
) -> ToolOutput:
    """The result of a tool the user stopped: how long it ran and what it printed so far."""
    so_far = "".join(partial)
    head = f"stopped by the user after {elapsed_s:.1f} s"
    content = f"{head}; output so far:\n{so_far}" if so_far else f"{head}; no output"
    return cap_content(
        ToolOutput(summary=INTERRUPTED_SUMMARY, content=content, is_error=True), max_bytes
    )
