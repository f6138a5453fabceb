"""Search tools: ``glob`` (paths by pattern) and ``grep`` (lines by regex).

Both walk directories with ``ctx.fs.list_dir``, so hidden entries, ``.gitignore``-d paths and
symlinks leading out of scope are skipped the same way everywhere. A grep result too large for
the context is written to ``ctx.scratch_dir`` and the model gets a map of it instead.

Patterns and globs are the model's, so they are matched with RE2 (``orchestrator.core.safe_regex``):
linear time, and the GIL is released while a line is matched. The search runs in a worker
thread that checks its stop flag before every line and between the windows of a long one, so
a cancelled search stops within a fraction of a second and the event loop is never blocked
meanwhile (nor is shutdown, which waits for the thread).
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import Field

from orchestrator.adapters.scoped_fs import BinaryFile, FsError, NotADirectory, ScopedFS
from orchestrator.capabilities.tools.arguments import ToolArgs, TypedTool
from orchestrator.capabilities.tools.base import ToolContext, ToolError, ToolOutput
from orchestrator.core.globs import compile_glob
from orchestrator.core.safe_regex import PatternError, SearchPattern, WholeMatch, compile_search
from orchestrator.core.tool_output import TOOL_OUTPUT_MAX_BYTES

GLOB_MAX_SHOWN = 500
"""Matches listed in a glob result; the summary still gives the full count."""

WALK_MAX_ENTRIES = 100_000
"""Entries one directory listing may return; bigger directories are searched in part."""

GREP_MAP_HITS = 200
"""Above this many hit lines grep saves its result to a file and shows a map."""

GREP_MAX_HITS = 20_000
"""grep stops collecting here, so a pattern like ``.`` cannot exhaust memory."""

GREP_FILE_MAX_BYTES = 4 * 1024 * 1024
"""Only the first part of a larger file is searched."""

GREP_LINE_CHARS = 300
"""Hit lines are shortened to this in the inline result (the saved file keeps more)."""

GREP_SAVED_LINE_CHARS = 2000
GREP_MAP_FILES = 50
GREP_MAP_FIRST_HITS = 20

SUMMARY_PATTERN_CHARS = 80


# -- glob patterns ----------------------------------------------------------------------------


def glob_to_regex(pattern: str) -> WholeMatch:
    """Compile a path glob (``{a,b}`` alternatives allowed); ToolError when it is malformed."""
    try:
        return compile_glob(pattern, braces=True)
    except PatternError as exc:
        raise ToolError(str(exc)) from None


# -- walking ----------------------------------------------------------------------------------


class _Stopped(Exception):
    """The awaiting task was cancelled; the worker thread gives up.

    A signal, not a failure (outside the error tree: it only unwinds the worker thread and
    must never be reported as the search's error)."""


@dataclass(slots=True)
class _Walk:
    """A depth-first walk below one root, through ``ScopedFS.list_dir``."""

    fs: ScopedFS
    stop: threading.Event
    partial_dirs: list[str] = field(default_factory=list)
    """Directories that could not be listed, or only in part."""

    def files(self, root: Path, display_root: str) -> Iterator[tuple[str, str]]:
        """``(relative path, display path)`` of every visible entry; directories end in ``/``."""
        seen: set[Path] = set()
        stack: list[tuple[Path, str]] = [(root, "")]
        while stack:
            if self.stop.is_set():
                raise _Stopped
            directory, rel = stack.pop()
            try:
                listing = self.fs.list_dir(directory, limit=WALK_MAX_ENTRIES)
            except FsError:
                self.partial_dirs.append(_join(display_root, rel) or ".")
                continue
            # A symlinked directory can lead back up the tree: list each real directory once.
            if listing.path in seen:
                continue
            seen.add(listing.path)
            if listing.truncated:
                self.partial_dirs.append(listing.display)
            subdirs: list[tuple[Path, str]] = []
            for entry in listing.entries:
                # A file a permission rule hides (read(secrets/**)) is not shown or searched.
                if not self.fs.permits(listing.path / entry.rstrip("/")):
                    continue
                child_rel = rel + entry
                yield child_rel, _join(display_root, child_rel)
                if entry.endswith("/"):
                    subdirs.append((listing.path / entry.rstrip("/"), child_rel))
            stack.extend(reversed(subdirs))


def _join(display_root: str, rel: str) -> str:
    if display_root in ("", "."):
        return rel
    return f"{display_root.rstrip('/')}/{rel}"


def _resolve_dir(fs: ScopedFS, path: str) -> tuple[Path, str]:
    # The kind comes from the same check as the path: a second stat could see another entry.
    found = fs.lookup(path)
    if not found.is_dir:
        raise NotADirectory(path, "not a directory")
    return found.path, fs.display(found.path)


async def _in_thread(work: Any, *args: Any) -> Any:
    """Run blocking work in a thread; on cancellation tell it to stop instead of leaking it."""
    stop = threading.Event()
    try:
        return await asyncio.to_thread(work, stop, *args)
    except asyncio.CancelledError:
        stop.set()
        raise
    except FsError as exc:
        raise ToolError(str(exc)) from None


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}…"


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _where(pattern: str, path: str) -> str:
    shown = _short(pattern, SUMMARY_PATTERN_CHARS)
    return shown if path in ("", ".") else f"{shown} in {path}"


# -- glob -------------------------------------------------------------------------------------


class GlobArgs(ToolArgs):
    """``glob``'s arguments."""

    pattern: str = Field(description="Glob, relative to path.")
    path: str = Field(".", description="Directory to search.")


class GlobTool(TypedTool[GlobArgs]):
    """Find paths matching a glob pattern, sorted; hidden and ``.gitignore``-d entries skipped."""

    name = "glob"
    claude_code_name = "Glob"
    acp_kind = "search"
    side_effects = False
    kind = "read"
    description = (
        "List files matching a glob pattern below path (default: the workspace), sorted. "
        "`*` and `?` match within one path segment, `**` across directories, `{a,b}` either "
        "alternative: `**/*.py`, `src/**/test_*.{ts,tsx}`. Directories are listed with a "
        "trailing `/`. Hidden and .gitignore'd entries are skipped."
    )
    args_model = GlobArgs

    def __init__(self, *, max_shown: int = GLOB_MAX_SHOWN) -> None:
        super().__init__()
        self.max_shown = max_shown

    async def execute(self, args: GlobArgs, ctx: ToolContext) -> ToolOutput:
        """List the matches."""
        pattern = args.pattern.strip()
        if not pattern:
            raise ToolError("pattern is empty")
        regex = glob_to_regex(pattern.removeprefix("./"))
        result: ToolOutput = await _in_thread(self._glob, ctx.fs, regex, pattern, args.path)
        return result

    def _glob(
        self, stop: threading.Event, fs: ScopedFS, regex: WholeMatch, pattern: str, path: str
    ) -> ToolOutput:
        root, display_root = _resolve_dir(fs, path)
        walk = _Walk(fs, stop)
        matches = sorted(
            shown
            for rel, shown in walk.files(root, display_root)
            if regex.matches(rel) or (rel.endswith("/") and regex.matches(rel[:-1]))
        )
        where = _where(pattern, path)
        if not matches:
            return ToolOutput(summary=f"glob: {where} — no matches")
        count = f"{len(matches)} match" + ("" if len(matches) == 1 else "es")
        lines = matches[: self.max_shown]
        summary = f"glob: {where} — {count}"
        if len(matches) > self.max_shown:
            summary += f" (showing first {self.max_shown})"
            lines.append(f"[{len(matches) - self.max_shown} more; narrow the pattern or path]")
        if walk.partial_dirs:
            lines.append(f"[not fully listed: {', '.join(walk.partial_dirs[:10])}]")
        return ToolOutput(summary=summary, content="\n".join(lines) + "\n")


# -- grep -------------------------------------------------------------------------------------


@dataclass(slots=True)
class _GrepResult:
    hits: list[tuple[str, int, str]] = field(default_factory=list)
    files_searched: int = 0
    skipped_binary: int = 0
    unreadable: list[str] = field(default_factory=list)
    partly_searched: list[str] = field(default_factory=list)
    capped: bool = False


class GrepArgs(ToolArgs):
    """``grep``'s arguments."""

    pattern: str = Field(description="Regular expression (RE2 syntax).")
    path: str = Field(".", description="Directory or file.")
    glob: str | None = Field(None, description="Only search files matching this glob.")
    case_insensitive: bool = Field(False, description="Match letters in either case.")


class GrepTool(TypedTool[GrepArgs]):
    """Search file contents for a regular expression, line by line."""

    name = "grep"
    claude_code_name = "Grep"
    acp_kind = "search"
    side_effects = False
    kind = "read"
    description = (
        "Search files for a regular expression (RE2 syntax), line by line, below path (a "
        "directory or one file; default: the workspace). Optional glob filters files (`*.py` "
        "matches the file name, `src/**/*.py` the path). Binary, hidden and .gitignore'd files "
        "are skipped. Returns `path:line:text`; a large result is saved to a file and "
        "summarised. RE2 has no backreferences or lookaround; \\d \\w \\s \\b are ASCII-only "
        "(use \\pL, \\pN for other scripts)."
    )
    args_model = GrepArgs

    def __init__(self, *, max_bytes: int = TOOL_OUTPUT_MAX_BYTES) -> None:
        super().__init__()
        self.max_bytes = max_bytes
        """Content budget: a larger result is saved to a file instead."""

    async def execute(self, args: GrepArgs, ctx: ToolContext) -> ToolOutput:
        """Search and report hits, or save them and report a map."""
        glob = None if args.glob is None else args.glob.strip() or None
        try:
            regex = compile_search(args.pattern, ignore_case=args.case_insensitive)
        except PatternError as exc:
            raise ToolError(str(exc)) from None
        file_filter = None if glob is None else glob_to_regex(glob.removeprefix("./"))
        match_name = glob is not None and "/" not in glob
        found: _GrepResult = await _in_thread(
            self._search, ctx.fs, regex, args.path, file_filter, match_name
        )
        return await asyncio.to_thread(self._report, ctx, found, args.pattern, args.path)

    def _search(
        self,
        stop: threading.Event,
        fs: ScopedFS,
        regex: SearchPattern,
        path: str,
        file_filter: WholeMatch | None,
        match_name: bool,
    ) -> _GrepResult:
        found = _GrepResult()
        target = fs.lookup(path)
        real = target.path
        if target.is_dir:
            walk = _Walk(fs, stop)
            candidates: Iterator[tuple[str, str]] = (
                (rel, shown)
                for rel, shown in walk.files(real, fs.display(real))
                if not rel.endswith("/")
            )
        else:
            walk = None
            candidates = iter([(real.name, fs.display(real))])
        for rel, shown in candidates:
            if stop.is_set():
                raise _Stopped
            if file_filter is not None:
                # A path glob may be relative to the search path or to the workspace.
                subjects = [rel.rsplit("/", 1)[-1]] if match_name else [rel, shown]
                if not any(file_filter.matches(subject) for subject in subjects):
                    continue
            if self._search_file(stop, fs, regex, shown, found):
                found.capped = True
                break
        if walk is not None:
            found.unreadable.extend(walk.partial_dirs)
        elif found.unreadable or found.skipped_binary:
            # One named file that cannot be searched is an error, not "no matches".
            why = "binary file" if found.skipped_binary else found.unreadable[0]
            raise ToolError(f"cannot search {why}")
        return found

    @staticmethod
    def _search_file(
        stop: threading.Event, fs: ScopedFS, regex: SearchPattern, shown: str, found: _GrepResult
    ) -> bool:
        """Add one file's hits; True once the hit cap is reached."""
        try:
            file = fs.read_text(shown, max_bytes=GREP_FILE_MAX_BYTES)
        except BinaryFile:
            found.skipped_binary += 1
            return False
        except FsError as exc:
            found.unreadable.append(f"{shown} ({exc.reason})")
            return False
        found.files_searched += 1
        if file.truncated:
            found.partly_searched.append(shown)
        for number, line in enumerate(file.text.split("\n"), start=1):
            # Per line, not per file: one file may hold 4 MiB of lines that are slow to match.
            if stop.is_set():
                raise _Stopped
            line = line.removesuffix("\r")
            # A long line is matched in windows, the stop flag checked between them.
            if regex.search(line, stop.is_set):
                found.hits.append((shown, number, line))
                if len(found.hits) >= GREP_MAX_HITS:
                    return True
        return False

    def _report(self, ctx: ToolContext, found: _GrepResult, pattern: str, path: str) -> ToolOutput:
        where = _where(pattern, path)
        notes = _notes(found)
        if not found.hits:
            searched = _plural(found.files_searched, "file")
            summary = f"grep: {where} — no matches in {searched}"
            return ToolOutput(summary=summary, content="".join(notes) or None)
        per_file = Counter(shown for shown, _, _ in found.hits)
        counts = f"{_plural(len(found.hits), 'hit')} in {_plural(len(per_file), 'file')}"
        inline = "".join(
            f"{shown}:{n}:{_short(line, GREP_LINE_CHARS)}\n" for shown, n, line in found.hits
        )
        content = inline + "".join(notes)
        if len(found.hits) <= GREP_MAP_HITS and len(content.encode()) <= self.max_bytes:
            return ToolOutput(summary=f"grep: {where} — {counts}", content=content)

        saved = "".join(
            f"{shown}:{n}:{_short(line, GREP_SAVED_LINE_CHARS)}\n" for shown, n, line in found.hits
        ) + "".join(notes)
        name = f"grep-{uuid.uuid4().hex[:12]}.txt"
        try:
            written = ctx.fs.write_text(ctx.scratch_dir / name, saved)
        except FsError as exc:
            raise ToolError(
                f"the result is too large to show and could not be saved: {exc}"
            ) from None
        shown_path = ctx.fs.display(written)
        lines = [
            f"{counts} — too many to show here. The full result ({len(found.hits)} lines of "
            f"`path:line:text`) is saved to {shown_path}: read it with read_file "
            "(offset/limit), or narrow the pattern, path or glob.",
            "",
            "Hits per file:",
        ]
        ranked = sorted(per_file.items(), key=lambda item: (-item[1], item[0]))
        lines += [f"{count:>6}  {shown}" for shown, count in ranked[:GREP_MAP_FILES]]
        if len(ranked) > GREP_MAP_FILES:
            lines.append(f"        … {len(ranked) - GREP_MAP_FILES} more files")
        lines += ["", f"First {min(GREP_MAP_FIRST_HITS, len(found.hits))} hits:"]
        lines += [
            f"{shown}:{n}:{_short(line, GREP_LINE_CHARS // 2)}"
            for shown, n, line in found.hits[:GREP_MAP_FIRST_HITS]
        ]
        summary = f"grep: {where} — {counts}, saved to {shown_path}"
        return ToolOutput(summary=summary, content="\n".join(lines) + "\n" + "".join(notes))


def _notes(found: _GrepResult) -> list[str]:
    notes: list[str] = []
    if found.capped:
        notes.append(f"[stopped after {GREP_MAX_HITS} hits; narrow the search]\n")
    if found.partly_searched:
        notes.append(
            f"[only the first {GREP_FILE_MAX_BYTES} bytes searched in: "
            f"{', '.join(found.partly_searched[:10])}]\n"
        )
    if found.skipped_binary:
        notes.append(f"[{found.skipped_binary} binary files skipped]\n")
    if found.unreadable:
        notes.append(f"[could not read: {', '.join(found.unreadable[:10])}]\n")
    return notes
