"""A preread that went as a ``[File: …]`` system message, drawn as the Read call it stands for.

With ``file_ref_style = "synthetic_read"`` an ``@file`` mention becomes a ``read_file`` call the
pod makes for the model. With thinking on the API refuses such a call (an assistant message
without thinking in a tool loop), so the pod attaches the same files as ``[File: …]`` system
messages instead, with ``origin`` :data:`PREREAD_ORIGIN` (docs/thinking.md). The wire stays as
it is; front-ends (the terminal UI, ACP) draw those messages as the Read card a synthetic read
shows, from the message text alone, so a session replayed from its file draws the same.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["PREREAD_ORIGIN", "PrereadCall", "preread_call"]

PREREAD_ORIGIN = "preread"
"""The ``origin`` of a system message that carries a preread (thinking on)."""

_HEADER = re.compile(
    r"\[(?P<kind>File|Dir|Image): (?P<path>.+?)"
    r"(?: \(lines? (?P<first>\d+)(?:-(?P<last>\d+))?\))?\]"
)
# The markers file_refs.py appends to a capped body (its TRUNCATION_MARKER, DIR_TRUNCATION_MARKER).
_CUT_FILE = re.compile(r"\[\.\.\.truncated, (?P<total>\d+) bytes total — [^\]]*\]")
_CUT_DIR = re.compile(r"\[\.\.\.truncated, (?P<total>\d+) entries total\]")


@dataclass(frozen=True, slots=True)
class PrereadCall:
    """The ``read_file`` call and result a preread system message is drawn as."""

    call_id: str
    path: str
    arguments: dict[str, Any] = field(default_factory=dict)
    summary: str = ""
    content: str | None = None
    name: str = "read_file"


def _lines(body: str) -> list[str]:
    return body.splitlines()


def _file_summary(path: str, body: str) -> str:
    lines = _lines(body)
    cut = _CUT_FILE.fullmatch(lines[-1]) if lines else None
    shown = len(lines) - (1 if cut else 0)
    if cut:
        return f"read_file: {path} — first {shown} lines of {int(cut['total']):,} bytes"
    return f"read_file: {path} — {shown} lines" + (" (empty)" if shown == 0 else "")


def _dir_summary(path: str, body: str) -> str:
    lines = _lines(body)
    cut = _CUT_DIR.fullmatch(lines[-1]) if lines else None
    empty = body.strip() == "(empty directory)"
    total = int(cut["total"]) if cut else (0 if empty else len(lines))
    return f"read_file: {path} — directory, {total} {'entry' if total == 1 else 'entries'}"


def preread_call(text: str, *, seq: int | None) -> PrereadCall | None:
    """The Read call a preread message (``text``, committed as item ``seq``) stands for;
    None when the text is not a ``[File: …]``, ``[Dir: …]`` or ``[Image: …]`` body."""
    header, _, body = text.partition("\n")
    found = _HEADER.fullmatch(header)
    if found is None:
        return None
    path, kind = found["path"], found["kind"]
    # The item's seq makes the id unique in the session and the same live and on replay.
    call_id = f"preread_{seq}" if seq is not None else f"preread_{path}"
    arguments: dict[str, Any] = {"path": path}
    if found["first"] is not None:
        first = int(found["first"])
        last = int(found["last"] or first)
        arguments |= {"offset": first, "limit": last - first + 1}
        shown = f"line {first}" if first == last else f"lines {first}-{last}"
        summary = f"read_file: {path} — {shown}"
    elif kind == "Dir":
        summary = _dir_summary(path, body)
    elif kind == "Image":
        summary = f"read_file: {path} — image"
    else:
        summary = _file_summary(path, body)
    return PrereadCall(call_id, path, arguments, summary, body or None)
