"""File tools: ``read_file``, ``write_file`` and ``edit_file``, all through ``ctx.fs``.

:func:`read_file_output` is ``read_file``'s reader on its own, so the pod's synthetic reads of
``@`` files (``orchestrator.runtime.file_refs``) are the same as the tool's.
"""

from __future__ import annotations

import asyncio
import difflib
from typing import Any

from pydantic import Field, ValidationError

from orchestrator.adapters.scoped_fs import FileText, FsError, ScopedFS
from orchestrator.capabilities.tools.arguments import ToolArgs, TypedTool
from orchestrator.capabilities.tools.base import ToolContext, ToolError, ToolOutput
from orchestrator.capabilities.tools.client_files import read_through, write_through
from orchestrator.core.tool_output import TOOL_OUTPUT_MAX_BYTES

READ_MAX_BYTES = 64 * 1024 * 1024
"""The most of one file read_file and edit_file load; beyond it only the start is reachable."""

HEAD_TAIL_LINE_CHARS = 400
"""In a head-and-tail view, longer lines are shortened so one minified line cannot fill it."""

EDIT_CONTEXT_LINES = 3

WORKSPACE_PATH = "File path, relative to the workspace."


# -- read_file --------------------------------------------------------------------------------


def split_lines(text: str) -> list[str]:
    """Lines split on ``\\n`` only (as editors and grep number them), without line endings."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def number_lines(lines: list[str], first: int) -> str:
    """Lines prefixed with their 1-based number, ``cat -n`` style."""
    return "".join(f"{n:>5}\t{line}\n" for n, line in enumerate(lines, start=first))


def _shorten(line: str) -> str:
    if len(line) <= HEAD_TAIL_LINE_CHARS:
        return line
    return f"{line[:HEAD_TAIL_LINE_CHARS]}… [{len(line)} chars]"


def _numbered_short(number: int, line: str) -> str:
    return f"{number:>5}\t{_shorten(line)}\n"


def _fit(lines: list[str], order: range, budget: int) -> int:
    """How many lines, taken in ``order``, fit in ``budget`` bytes once numbered (at least one)."""
    used = count = 0
    for index in order:
        used += len(_numbered_short(index + 1, lines[index]).encode())
        if used > budget and count:
            break
        count += 1
    return count


def read_file_output(
    fs: ScopedFS,
    path: str,
    *,
    max_bytes: int,
    offset: int | None = None,
    limit: int | None = None,
    file: FileText | None = None,
) -> ToolOutput:
    """What ``read_file`` returns for ``path`` (blocking): numbered lines, a range, or head and tail.

    ``max_bytes`` is the content budget above which a whole-file read becomes head and tail.
    The pod's synthetic reads of ``@`` files call this too, so they look exactly like real ones.
    Raises :class:`FsError` when the file cannot be read, :class:`ToolError` for a bad range.
    ``file``: the text already read (the editor's buffer, :mod:`.client_files`).
    """
    file = file or fs.read_text(path, max_bytes=READ_MAX_BYTES)
    lines = split_lines(file.text)
    total = len(lines)
    where = f"read_file: {file.display} — {total} lines"
    note = ""
    if file.truncated:
        where += f" in the first {READ_MAX_BYTES} of {file.total_bytes} bytes"
        note = (
            f"[only the first {READ_MAX_BYTES} bytes of this {file.total_bytes}-byte file "
            "can be read; search the rest with grep or bash]\n"
        )
    if total == 0:
        return ToolOutput(summary=f"{where} (empty)")

    if offset is None and limit is None:
        whole = number_lines(lines, 1)
        if len(whole.encode()) <= max_bytes:
            return ToolOutput(summary=where, content=note + whole)
        return _head_and_tail(where, note, lines, file.total_bytes, max_bytes)

    first = offset or 1
    if first > total:
        raise ToolError(f"offset {first} is past the end of {file.display} ({total} lines)")
    last = total if limit is None else min(total, first + limit - 1)
    shown = number_lines(lines[first - 1 : last], first)
    if first == 1 and last == total:
        return ToolOutput(summary=where, content=note + shown)
    return ToolOutput(summary=f"{where} (showing {first}-{last})", content=note + shown)


def _head_and_tail(
    where: str, note: str, lines: list[str], total_bytes: int, max_bytes: int
) -> ToolOutput:
    total = len(lines)
    # Leave room for the note between the halves; the head gets the larger share.
    budget = max(max_bytes - 512, 1024)
    head_n = _fit(lines, range(total), budget * 3 // 5)
    head = "".join(_numbered_short(i + 1, lines[i]) for i in range(head_n))
    tail_n = _fit(lines, range(total - 1, head_n - 1, -1), budget - len(head.encode()))
    tail_first = total - tail_n + 1
    tail = "".join(_numbered_short(i + 1, lines[i]) for i in range(tail_first - 1, total))
    if tail_first == head_n + 1:
        # Everything fits once long lines are shortened: nothing in between is skipped.
        middle = f"[lines longer than {HEAD_TAIL_LINE_CHARS} characters are shortened]\n"
        return ToolOutput(summary=where, content=note + head + middle + tail)
    middle = (
        f"… lines {head_n + 1}-{tail_first - 1} not shown: the file ({total} lines, "
        f"{total_bytes} bytes) is too large to read whole. Read a range with offset and "
        f"limit (e.g. offset={head_n + 1}, limit=200) or search it with grep. …\n"
    )
    summary = f"{where} (showing 1-{head_n} and {tail_first}-{total})"
    return ToolOutput(summary=summary, content=note + head + middle + tail)


class ReadFileArgs(ToolArgs):
    """``read_file``'s arguments."""

    path: str = Field(description=WORKSPACE_PATH)
    offset: int | None = Field(None, ge=1, description="First line (1-based).")
    limit: int | None = Field(None, ge=1, description="Number of lines.")


class ReadFileTool(TypedTool[ReadFileArgs]):
    """Read a text file as numbered lines, whole, by range, or as head and tail when huge."""

    name = "read_file"
    claude_code_name = "Read"
    acp_kind = "read"
    side_effects = False
    kind = "read"
    description = (
        "Read a text file from the workspace. Returns numbered lines (`   12\\tcode`). "
        "Use offset (1-based first line) and limit (number of lines) to read part of a "
        "large file; a file too large to show whole is returned as its head and tail."
    )
    args_model = ReadFileArgs

    def __init__(self, *, max_bytes: int = TOOL_OUTPUT_MAX_BYTES) -> None:
        super().__init__()
        self.max_bytes = max_bytes
        """Content budget: above it a whole-file read turns into head and tail."""

    async def execute(self, args: ReadFileArgs, ctx: ToolContext) -> ToolOutput:
        """Read the file and number its lines."""
        buffer = await read_through(ctx.client_files, ctx.fs, args.path, ctx.call_id)
        try:
            # Reading and numbering a large file takes a while: all of it stays off the event loop.
            return await asyncio.to_thread(
                read_file_output,
                ctx.fs,
                args.path,
                max_bytes=self.max_bytes,
                offset=args.offset,
                limit=args.limit,
                file=buffer,
            )
        except FsError as exc:
            raise ToolError(str(exc)) from None


# -- write_file -------------------------------------------------------------------------------


class WriteFileArgs(ToolArgs):
    """``write_file``'s arguments."""

    path: str = Field(description=WORKSPACE_PATH)
    content: str = Field(description="The whole new file content.")


class WriteFileTool(TypedTool[WriteFileArgs]):
    """Create or overwrite a text file (parent directories are created inside scope)."""

    name = "write_file"
    claude_code_name = "Write"
    acp_kind = "edit"
    side_effects = True
    kind = "edit"
    description = (
        "Write a text file in the workspace, replacing it if it exists and creating parent "
        "directories as needed. Prefer edit_file for changing part of an existing file."
    )
    args_model = WriteFileArgs

    async def execute(self, args: WriteFileArgs, ctx: ToolContext) -> ToolOutput:
        """Write the file."""
        note = ""
        try:
            through = await write_through(
                ctx.client_files, ctx.fs, args.path, args.content, ctx.call_id
            )
            if through is not None:
                written, note = through
            else:
                written = await asyncio.to_thread(ctx.fs.write_text, args.path, args.content)
        except FsError as exc:
            raise ToolError(str(exc)) from None
        size = len(args.content.encode("utf-8"))
        return ToolOutput(summary=f"write_file: {ctx.fs.display(written)} — {size} bytes{note}")

    def preview(self, arguments: dict[str, Any], fs: ScopedFS) -> str | None:
        """The unified diff this call would apply (for an approval), or None if it would fail."""
        try:
            args = WriteFileArgs.model_validate(arguments)
        except ValidationError:
            return None
        try:
            current = fs.read_text(args.path, max_bytes=READ_MAX_BYTES)
            before, display = current.text, current.display
        except FsError:
            before, display = "", args.path  # a new file
        return unified_diff(display, before, args.content)


# -- edit_file --------------------------------------------------------------------------------


class EditFileArgs(ToolArgs):
    """``edit_file``'s arguments."""

    path: str = Field(description=WORKSPACE_PATH)
    old_string: str = Field(description="Exact text to replace.")
    new_string: str = Field(description="Replacement text.")
    replace_all: bool = Field(
        False, description="Replace every occurrence instead of requiring exactly one."
    )


class EditFileTool(TypedTool[EditFileArgs]):
    """Replace an exact string in a file; it must occur once unless ``replace_all``."""

    name = "edit_file"
    claude_code_name = "Edit"
    acp_kind = "edit"
    side_effects = True
    kind = "edit"
    description = (
        "Replace old_string with new_string in a file. old_string must match the file exactly "
        "(including indentation) and occur exactly once, unless replace_all is true. Include "
        "enough surrounding lines to make it unique."
    )
    args_model = EditFileArgs

    async def execute(self, args: EditFileArgs, ctx: ToolContext) -> ToolOutput:
        """Apply the replacement and show the edited region."""
        old, new = args.old_string, args.new_string
        if not old:
            raise ToolError("old_string is empty; use write_file to create a file")
        if old == new:
            raise ToolError("old_string and new_string are identical; nothing to change")
        try:
            if ctx.client_files is None:
                return await asyncio.to_thread(
                    self._edit, ctx, args.path, old, new, args.replace_all
                )
            # The editor's buffer is edited, and the edit written back through the editor.
            buffer = await read_through(ctx.client_files, ctx.fs, args.path, ctx.call_id)
            file = (
                buffer
                if buffer is not None
                else await asyncio.to_thread(ctx.fs.read_text, args.path, max_bytes=READ_MAX_BYTES)
            )
            edited, output = self._edited(file, old, new, args.replace_all)
            through = await write_through(ctx.client_files, ctx.fs, file.path, edited, ctx.call_id)
            note = through[1] if through is not None else ""
            return ToolOutput(summary=output.summary + note, content=output.content)
        except FsError as exc:
            raise ToolError(str(exc)) from None

    def _edit(
        self, ctx: ToolContext, path: str, old: str, new: str, replace_all: bool
    ) -> ToolOutput:
        file = ctx.fs.read_text(path, max_bytes=READ_MAX_BYTES)
        edited, output = self._edited(file, old, new, replace_all)
        ctx.fs.write_text(file.path, edited)
        return output

    @staticmethod
    def _edited(file: FileText, old: str, new: str, replace_all: bool) -> tuple[str, ToolOutput]:
        """The edited text, and what the call returns once it is written."""
        if file.truncated:
            raise ToolError(f"{file.display} is too large to edit ({file.total_bytes} bytes)")
        edited, count, start, length = apply_edit(file.text, old, new, replace_all, file.display)
        noun = "occurrence" if count == 1 else "occurrences"
        summary = f"edit_file: {file.display} — replaced {count} {noun}"
        return edited, ToolOutput(summary=summary, content=_snippet(edited, start, length))

    def preview(self, arguments: dict[str, Any], fs: ScopedFS) -> str | None:
        """The unified diff this call would apply (for an approval), or None if it would fail."""
        try:
            args = EditFileArgs.model_validate(arguments)
            file = fs.read_text(args.path, max_bytes=READ_MAX_BYTES)
            edited, *_ = apply_edit(
                file.text, args.old_string, args.new_string, args.replace_all, file.display
            )
        except (ValidationError, ToolError, FsError):
            return None
        return unified_diff(file.display, file.text, edited)


def apply_edit(
    text: str, old: str, new: str, replace_all: bool, display: str
) -> tuple[str, int, int, int]:
    """The edited text, the number of replacements, where the first is, and its length."""
    count = text.count(old)
    if count == 0 and "\r\n" in text and "\n" in old:
        # read_file shows lines without their \r; match the file's CRLF endings instead.
        old, new = _crlf(old), _crlf(new)
        count = text.count(old)
    if count == 0:
        raise ToolError(f"old_string not found in {display}")
    if count > 1 and not replace_all:
        raise ToolError(
            f"old_string occurs {count} times in {display}; include more surrounding "
            "context to make it unique, or set replace_all to true"
        )
    start = text.index(old)
    edited = text.replace(old, new) if replace_all else text.replace(old, new, 1)
    return edited, count, start, len(new)


def unified_diff(display: str, before: str, after: str) -> str:
    """``before`` → ``after`` as a unified diff of ``display``."""
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=f"a/{display}",
        tofile=f"b/{display}",
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _crlf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\n", "\r\n")


def _snippet(text: str, start: int, length: int) -> str:
    """The numbered lines around ``text[start:start + length]``, so the model sees the result."""
    first = text.count("\n", 0, start) + 1
    # A newline that ends the new text does not reach into the next line.
    last = first + text.count("\n", start, max(start, start + length - 1))
    lines = split_lines(text)
    lo = max(1, first - EDIT_CONTEXT_LINES)
    hi = min(len(lines), last + EDIT_CONTEXT_LINES)
    return number_lines(lines[lo - 1 : hi], lo)
