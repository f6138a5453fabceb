"""``@path`` file refs: resolved at submit time into system messages, or pre-read as tool results.

Two styles (``file_ref_style`` in the config):

* ``system_message`` — the user message keeps ``@<path>`` and one ``[File: <path>]\\n<body>``
  system message follows per ref. A ref that cannot be read leaves
  ``[unresolved file ref: <path>]`` in the user message and becomes a :class:`FileRefError`
  the caller turns into a ``warn`` alert.
* ``synthetic_read`` — :func:`preread_files` reads the files in parallel with ``read_file``'s
  own reader, for a synthetic tool call the model appears to have made.

System-message bodies are cut at the cap and marked with :data:`TRUNCATION_MARKER`; synthetic
reads show head and tail like ``read_file``.

An image (PNG, JPEG, GIF or WebP, told by its first bytes, up to the API's 5 MB) is attached
as an ``image`` block after ``[Image: <path>]``, in both styles (``read_file`` reads text
only, so there is no real call for a synthetic one to look like).

A ref with a line range (``@src/a.py:L10-L40``) attaches those lines only, numbered as
``read_file`` numbers them (``[File: src/a.py (lines 10-40)]``); in the synthetic-read style it
is a ``read_file`` call with ``offset`` and ``limit``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.adapters.scoped_fs import FsError, ScopedFS
from orchestrator.capabilities.tools.base import ToolError, ToolOutput
from orchestrator.capabilities.tools.files import read_file_output
from orchestrator.core.history import (
    AssistantMessage,
    Item,
    SystemMessage,
    ToolResult,
    ToolUseBlock,
)
from orchestrator.core.images import IMAGE_EXTENSIONS, IMAGE_MAX_BYTES, ImageData, image_from_bytes
from orchestrator.core.segments import FileRefSegment, Segment, flatten_segments, line_range_suffix
from orchestrator.core.tool_output import cap_content
from orchestrator.errors import PodRuntimeError

TRUNCATION_MARKER = "[...truncated, {total} bytes total — use read_file for the rest]"
"""Appended on its own line to a capped body; ``total`` is the file's size in bytes."""

DIR_TRUNCATION_MARKER = "[...truncated, {total} entries total]"
"""Appended on its own line to a capped directory listing."""

UNRESOLVED_PLACEHOLDER = "[unresolved file ref: {path}]"
"""What the model reads in the user message in place of a ref that could not be attached."""

FILE_REF_ORIGIN = "file_ref"
"""The ``origin`` of the system messages carrying file bodies."""

DIR_LIST_LIMIT = 200
"""How many entries a directory ref lists."""


class FileRefError(PodRuntimeError):
    """A ref that could not be attached; ``reason`` comes from the file system error."""

    def __init__(self, path: str, reason: str, *, cause: FsError | None = None) -> None:
        super().__init__(f"could not attach @{path}: {reason}")
        self.path = path
        self.reason = reason
        self.cause = cause

    @property
    def alert_message(self) -> str:
        """The one-line ``warn`` alert for people: ``could not attach @src/x.py: not found``."""
        return str(self)

    @property
    def placeholder(self) -> str:
        """What stays in the user message instead of ``@<path>``."""
        return UNRESOLVED_PLACEHOLDER.format(path=self.path)


@dataclass(frozen=True)
class ResolvedRef:
    """A readable ref: ``text`` is the whole system-message body, header included."""

    path: str
    fs_path: Path
    text: str
    is_dir: bool = False
    truncated: bool = False
    total_bytes: int = 0
    image: ImageData | None = None

    def to_item(self) -> SystemMessage:
        """The history item carrying this body."""
        return SystemMessage(text=self.text, origin=FILE_REF_ORIGIN, image=self.image)


@dataclass(frozen=True)
class RefResolution:
    """The outcome of resolving a submit: the model-facing text and what to append after it."""

    user_text: str
    items: list[SystemMessage] = field(default_factory=list)
    failures: list[FileRefError] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    """Refs past the per-message limit, left as text (their labels, without ``@``)."""


def _with_marker(body: str, marker: str) -> str:
    sep = "" if body.endswith("\n") or not body else "\n"
    return f"{body}{sep}{marker}"


@dataclass(frozen=True)
class _Body:
    fs_path: Path
    is_dir: bool
    text: str
    """The body as the model reads it, marker included."""
    shown_lines: int
    """Lines of file text (or entries) in the body, the marker not counted."""
    truncated: bool
    total: int
    """Bytes in the file, or entries in the directory."""


def _read_body(fs: ScopedFS, path: str, *, max_bytes: int) -> _Body:
    """The capped body of a file or directory ref; raises FileRefError."""
    try:
        if fs.lookup(path).is_dir:
            listing = fs.list_dir(path, limit=DIR_LIST_LIMIT)
            body = "\n".join(listing.entries) if listing.entries else "(empty directory)"
            if listing.truncated:
                body = _with_marker(body, DIR_TRUNCATION_MARKER.format(total=listing.total))
            entries = len(listing.entries)
            return _Body(listing.path, True, body, entries, listing.truncated, listing.total)
        text = fs.read_text(path, max_bytes=max_bytes)
    except FsError as exc:
        raise FileRefError(path, exc.reason, cause=exc) from exc
    body = text.text
    if text.truncated:
        body = _with_marker(body, TRUNCATION_MARKER.format(total=text.total_bytes))
    return _Body(text.path, False, body, _line_count(text.text), text.truncated, text.total_bytes)


def _line_count(text: str) -> int:
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def _read_lines(
    fs: ScopedFS, path: str, lines: tuple[int, int], *, max_bytes: int
) -> tuple[Path, ToolOutput]:
    """Lines ``first..last`` of a file, numbered as ``read_file`` numbers them, and its canonical
    path; raises FileRefError."""
    label = path + line_range_suffix(lines)
    first, last = lines
    try:
        info = fs.lookup(path)
        if info.is_dir:
            raise FileRefError(label, "a line range needs a file, not a directory")
        output = read_file_output(
            fs, path, max_bytes=max_bytes, offset=first, limit=last - first + 1
        )
    except FsError as exc:
        raise FileRefError(label, exc.reason, cause=exc) from exc
    except ToolError as exc:
        raise FileRefError(label, str(exc)) from exc
    return info.path, cap_content(output, max_bytes)


def is_image_name(path: str) -> bool:
    """Whether a path's extension makes it worth reading as an image."""
    return path.rpartition(".")[2].lower() in IMAGE_EXTENSIONS


def _read_image(fs: ScopedFS, path: str) -> ResolvedRef | None:
    """The image a ref names, or None when the file is not one (it is then read as text)."""
    try:
        if fs.lookup(path).is_dir:
            return None
        file = fs.read_bytes(path, max_bytes=IMAGE_MAX_BYTES)
    except FsError as exc:
        raise FileRefError(path, exc.reason, cause=exc) from exc
    image = image_from_bytes(file.data)
    if image is None:
        return None
    if file.truncated:
        raise FileRefError(
            path,
            f"image too large ({file.total_bytes / 2**20:.1f} MiB; the API takes at most "
            f"{IMAGE_MAX_BYTES // 2**20} MiB)",
        )
    text = f"[Image: {path}]"
    return ResolvedRef(path, file.path, text, total_bytes=file.total_bytes, image=image)


def resolve_file_ref(
    fs: ScopedFS, path: str, *, max_bytes: int, lines: tuple[int, int] | None = None
) -> ResolvedRef:
    """``[File: <path>]\\n<body>`` (or ``[Dir: <path>]\\n<listing>``); raises FileRefError.

    With ``lines``, the body is those lines, numbered, under ``[File: <path> (lines a-b)]``.
    """
    image = _read_image(fs, path) if lines is None and is_image_name(path) else None
    if image is not None:
        return image
    if lines is not None:
        fs_path, output = _read_lines(fs, path, lines, max_bytes=max_bytes)
        first, last = lines
        shown = f"line {first}" if first == last else f"lines {first}-{last}"
        text = f"[File: {path} ({shown})]\n{output.content}"
        return ResolvedRef(path + line_range_suffix(lines), fs_path, text)
    body = _read_body(fs, path, max_bytes=max_bytes)
    header = "Dir" if body.is_dir else "File"
    return ResolvedRef(
        path,
        body.fs_path,
        f"[{header}: {path}]\n{body.text}",
        body.is_dir,
        body.truncated,
        body.total,
    )


def resolve_segments(
    fs: ScopedFS, segments: list[Segment], *, max_bytes: int, max_refs: int | None = None
) -> RefResolution:
    """Resolve every file ref in order; a path referred to twice is attached once, and refs
    past ``max_refs`` distinct ones stay as text (listed in ``skipped``)."""
    parts: list[str] = []
    items: list[SystemMessage] = []
    failures: list[FileRefError] = []
    skipped: list[str] = []
    seen: dict[str, FileRefError | None] = {}
    for seg in segments:
        if not isinstance(seg, FileRefSegment):
            parts.append(flatten_segments([seg]))
            continue
        label = seg.label
        if label not in seen and max_refs is not None and len(seen) >= max_refs:
            if label not in skipped:
                skipped.append(label)
            parts.append(f"@{label}")
            continue
        if label not in seen:
            try:
                ref = resolve_file_ref(fs, seg.path, max_bytes=max_bytes, lines=seg.lines)
                items.append(ref.to_item())
                seen[label] = None
            except FileRefError as exc:
                failures.append(exc)
                seen[label] = exc
        failure = seen[label]
        parts.append(f"@{label}" if failure is None else failure.placeholder)
    return RefResolution("".join(parts), items, failures, skipped)


# -- synthetic reads ------------------------------------------------------------------------------


@dataclass(frozen=True)
class PrereadResult:
    """One pre-read file: a ``read_file``-style output, or the error that prevented it."""

    path: str
    output: ToolOutput | None = None
    error: FileRefError | None = None
    lines: tuple[int, int] | None = None
    """The range read (a ``read_file`` call with ``offset`` and ``limit``), if the ref had one."""

    @property
    def ok(self) -> bool:
        """Whether the file was read."""
        return self.error is None


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def preread_one(
    fs: ScopedFS, path: str, *, max_bytes: int, lines: tuple[int, int] | None = None
) -> PrereadResult:
    """Read one mentioned file exactly as a ``read_file`` call capped at ``max_bytes`` would (blocking).

    The reader is the tool's own and the cap is the tool runner's, so the model cannot tell the
    synthetic read from one it made. A directory, which ``read_file`` refuses, gets its listing.
    """
    if lines is not None:
        try:
            _, output = _read_lines(fs, path, lines, max_bytes=max_bytes)
        except FileRefError as exc:
            return PrereadResult(path, error=exc, lines=lines)
        return PrereadResult(path, output=output, lines=lines)
    try:
        if fs.lookup(path).is_dir:
            body = _read_body(fs, path, max_bytes=max_bytes)
            summary = f"read_file: {path} — directory, {_count(body.total, 'entry', 'entries')}"
            return PrereadResult(path, output=ToolOutput(summary=summary, content=body.text))
        output = read_file_output(fs, path, max_bytes=max_bytes)
    except FileRefError as exc:
        return PrereadResult(path, error=exc)
    except FsError as exc:
        return PrereadResult(path, error=FileRefError(path, exc.reason, cause=exc))
    return PrereadResult(path, output=cap_content(output, max_bytes))


async def preread_files(
    fs: ScopedFS, refs: list[FileRefSegment], *, max_bytes: int, max_files: int = 5
) -> list[PrereadResult]:
    """Read up to ``max_files`` distinct refs in parallel; cancelling the caller cancels all."""
    unique = list({ref.label: ref for ref in refs}.values())[: max(max_files, 0)]
    # Each read is bounded (capped size, never a FIFO), so an abandoned thread ends quickly.
    reads = [
        asyncio.to_thread(preread_one, fs, r.path, max_bytes=max_bytes, lines=r.lines)
        for r in unique
    ]
    return list(await asyncio.gather(*reads))


def synthetic_read_items(
    results: list[PrereadResult], *, turn: int
) -> tuple[list[Item], list[FileRefError]]:
    """The items of the synthetic-read style: one assistant message calling ``read_file`` for
    each file read, then its results (committed together), and the refs that failed."""
    calls: list[ToolUseBlock] = []
    outputs: list[Item] = []
    failures: list[FileRefError] = []
    for n, res in enumerate(results, start=1):
        if res.error is not None or res.output is None:
            failures.append(res.error or FileRefError(res.path, "could not be read"))
            continue
        call_id = f"toolu_preread_{turn}_{n}"
        arguments: dict[str, object] = {"path": res.path}
        if res.lines is not None:
            arguments |= {"offset": res.lines[0], "limit": res.lines[1] - res.lines[0] + 1}
        calls.append(ToolUseBlock(id=call_id, name="read_file", input=arguments))
        outputs.append(
            ToolResult(
                call_id=call_id,
                summary=res.output.summary,
                content=res.output.content,
                synthetic=True,
            )
        )
    if not calls:
        return [], failures
    message = AssistantMessage(blocks=list(calls), synthetic=True, stop_reason="tool_use")
    return [message, *outputs], failures
