"""What a directory listing shows: which entries are visible, how names are printed, completions.

:class:`ScopedFS` reads a directory's raw entries through a resolved fd (:meth:`ScopedFS.scan_dir`);
this module decides what of that a listing shows. Hidden entries are left out unless asked for,
symlinks that lead out of the read roots are neither followed nor shown, entries the workspace's
``.gitignore`` matches are left out (the rules are cached and re-read only when the file changes),
and names that are not UTF-8 are printed with U+FFFD. :func:`listing_names` and
:func:`completions` shape the visible entries for ``list_dir`` and ``complete``. Nothing here opens
a path itself: reading ``.gitignore`` and resolving links are callbacks into the :class:`ScopedFS`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from orchestrator.adapters.scoped_fs.errors import FsError
from orchestrator.adapters.scoped_fs.gitignore import IgnoreRules, is_ignored, parse_gitignore
from orchestrator.adapters.scoped_fs.resolver import within

GITIGNORE_MAX_BYTES = 256 * 1024


@dataclass(frozen=True)
class DirListing:
    """A shallow, sorted, capped directory listing; directories end with ``/``."""

    path: Path
    display: str
    entries: list[str]
    total: int
    truncated: bool


@dataclass(frozen=True)
class DirEntry:
    """One raw directory entry; ``is_dir`` and ``is_symlink`` describe the entry, not a target."""

    name: str
    is_dir: bool
    is_symlink: bool


def printable_name(name: str) -> str:
    """A file name as text: bytes that are not UTF-8 (surrogate escapes) become U+FFFD.

    Such names cannot travel in JSON, the session file or a request, so the model and
    clients see the replacement character instead.
    """
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return name


class GitignoreCache:
    """The workspace's ``.gitignore`` rules, parsed again only when its mtime or size changes."""

    def __init__(self, workspace: Path) -> None:
        self._path = workspace / ".gitignore"
        self._key: tuple[int, int] | None = None
        self._rules = IgnoreRules()

    def rules(self, read: Callable[[], str]) -> IgnoreRules:
        """The current rules; ``read`` returns the file's text through the scoped reader."""
        # A stat by path is enough here: it only keys the cache; the rules are read via ``read``.
        try:
            st = os.stat(self._path)
        except OSError:
            self._key, self._rules = None, IgnoreRules()
            return self._rules
        key = (st.st_mtime_ns, st.st_size)
        if key != self._key:
            try:
                text = read()
            except FsError:
                text = ""
            self._key, self._rules = key, parse_gitignore(text)
        return self._rules


def visible_entries(
    directory: Path,
    entries: Iterable[DirEntry],
    *,
    hidden: bool,
    workspace: Path,
    rules: IgnoreRules,
    link_is_dir: Callable[[Path], bool | None],
) -> list[tuple[str, bool]]:
    """Visible ``(name, is_dir)`` pairs of a canonical directory's entries, sorted by name.

    ``link_is_dir`` says whether a symlink leads to a directory, or None when it leads out of
    the read roots.
    """
    in_workspace = within(directory, [workspace])
    found: list[tuple[str, bool]] = []
    for entry in entries:
        if entry.name.startswith(".") and not hidden:
            continue
        is_dir = entry.is_dir
        if entry.is_symlink:
            # Out-of-scope links are neither followed nor shown.
            leads_to_dir = link_is_dir(directory / entry.name)
            if leads_to_dir is None:
                continue
            is_dir = leads_to_dir
        if in_workspace and rules:
            parts = (directory / entry.name).relative_to(workspace).parts
            if is_ignored(rules, parts, is_dir):
                continue
        found.append((printable_name(entry.name), is_dir))
    found.sort()
    return found


def listing_names(visible: Iterable[tuple[str, bool]]) -> list[str]:
    """Names as a listing shows them: directories end with ``/``."""
    return [name + "/" if is_dir else name for name, is_dir in visible]


def completions(
    typed_dir: str, stem: str, visible: Iterable[tuple[str, bool]], *, limit: int
) -> list[str]:
    """The visible names that start with ``stem``, as typed (``typed_dir`` kept), at most ``limit``."""
    out: list[str] = []
    for name, is_dir in visible:
        if name.startswith(stem):
            out.append(typed_dir + name + ("/" if is_dir else ""))
            if len(out) >= limit:
                break
    return out
