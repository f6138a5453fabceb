"""The scoped file system itself: every read, write and directory scan through a resolved fd.

:class:`ScopedFS` resolves a path with :mod:`.resolver`, checks the canonical path of the fd it
got against the read or write roots, and then works only through that fd: reading a capped text
file, writing one (new parent directories and the atomic replace are :mod:`.fd_io`'s job), and
scanning a directory's raw entries. What a listing or a completion shows of those entries
(hidden names, out-of-scope links, ``.gitignore``) is :mod:`.listing`'s job; this class hands it
the entries and the means to read ``.gitignore`` and resolve a link.
"""

from __future__ import annotations

import codecs
import contextlib
import copy
import errno
import os
import stat
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from orchestrator.adapters.scoped_fs import resolver
from orchestrator.adapters.scoped_fs.errors import (
    BinaryFile,
    FsError,
    FsIOError,
    IsADirectory,
    NotADirectory,
    NotFound,
    NotRegularFile,
    OutOfScope,
    SymlinkEscape,
    os_error,
)
from orchestrator.adapters.scoped_fs.fd_io import make_dirs, read_fd, replace_file
from orchestrator.adapters.scoped_fs.listing import (
    GITIGNORE_MAX_BYTES,
    DirEntry,
    DirListing,
    GitignoreCache,
    completions,
    listing_names,
    printable_name,
    visible_entries,
)
from orchestrator.adapters.scoped_fs.resolver import (
    CHANGED,
    READ_FLAGS,
    RETRIES,
    Found,
    beneath,
    missing,
    walk,
    within,
)
from orchestrator.config.regular_file import kind_of


@dataclass(frozen=True)
class FileText:
    """The (possibly truncated) text of a file."""

    path: Path
    display: str
    text: str
    total_bytes: int
    truncated: bool


@dataclass(frozen=True)
class FileBytes:
    """The (possibly truncated) bytes of a file."""

    path: Path
    display: str
    data: bytes
    total_bytes: int
    truncated: bool


PathGuard = Callable[[Path, bool], None]
"""Called with the canonical path of every entry a guarded view opens (and True for a write);
raises :class:`RuleDenied` to refuse it."""


@dataclass(frozen=True)
class PathInfo:
    """An existing entry: its canonical path and whether it is a directory."""

    path: Path
    is_dir: bool


class ScopedFS:
    """Every file access of a pod: the workspace (read+write) plus extra read and write roots."""

    def __init__(
        self,
        workspace: Path,
        *,
        read_roots: Sequence[Path] = (),
        write_roots: Sequence[Path] = (),
    ) -> None:
        self.workspace: Path = Path(os.path.realpath(workspace))
        # Writable roots are readable too: a pod can read back what it wrote.
        self._write_roots = [self.workspace, *(Path(os.path.realpath(r)) for r in write_roots)]
        self._read_roots = [*self._write_roots, *(Path(os.path.realpath(r)) for r in read_roots)]
        # The fast path picks the deepest root a path starts with (a write root may lie in a
        # read root).
        self._roots_by_depth = sorted(self._read_roots, key=lambda r: len(r.parts), reverse=True)
        # The roots as given, only to tell "wrote a path outside" from "followed a link outside".
        given = [Path(workspace), *write_roots, *read_roots]
        self._lexical_roots = [Path(os.path.normpath(Path(r).absolute())) for r in given]
        self._gitignore = GitignoreCache(self.workspace)
        self._guard: PathGuard | None = None

    def guarded(self, guard: PathGuard) -> ScopedFS:
        """A view of this file system that also asks ``guard`` about every path it opens.

        The tool runner gives each call such a view, so a permission rule is checked on the
        very path that is opened, after symlinks: a link swapped in after the decision, or a
        file deep in a directory a search walks, meets the same rules as the call itself.
        """
        view = copy.copy(self)
        view._guard = guard
        return view

    def permits(self, path: str | Path) -> bool:
        """Whether a guarded view would open ``path`` (always True without a guard)."""
        if self._guard is None:
            return True
        try:
            with self._resolved(os.fspath(path), self._absolute(path)) as found:
                self._guard(found.real, False)
        except FsError:
            return False
        return True

    def canonical(self, path: str | Path) -> Path:
        """Where ``path`` leads, symlinks resolved, whether or not it exists or is in scope:
        the one resolution the permission rules and every access share."""
        raw = self._absolute(path)
        with self._resolved(os.fspath(path), raw) as found:
            return found.real

    def rule_path(self, path: str | Path) -> str:
        """The path permission rules match: canonical, relative to the workspace inside it
        (``""`` for the workspace itself), absolute outside. Unresolvable paths (a NUL byte)
        are taken as written, normalised."""
        try:
            real = self.canonical(path)
        except FsError:
            real = Path(os.path.normpath(self._absolute(os.fspath(path).replace("\x00", ""))))
        return self.rule_form(real)

    def rule_form(self, real: Path) -> str:
        """A canonical path as permission rules see it (see :meth:`rule_path`)."""
        if within(real, [self.workspace]):
            rel = real.relative_to(self.workspace).as_posix()
            return "" if rel == "." else rel
        return str(real)

    # -- resolution

    def _absolute(self, path: str | Path) -> Path:
        text = os.fspath(path)
        if "\x00" in text:
            raise NotFound(text.replace("\x00", "\\0"), "not found (path contains a NUL byte)")
        raw = Path(text)
        return raw if raw.is_absolute() else self.workspace / raw

    @contextlib.contextmanager
    def _resolved(self, shown: str, raw: Path) -> Iterator[Found]:
        """The one resolver: where ``raw`` leads, pinned by fds that are closed on exit."""
        found = None
        openat2 = resolver.openat2_fn()
        if openat2 is not None:
            parts = [p for p in str(raw).split("/") if p and p != "."]
            for root in self._roots_by_depth:
                depth = len(root.parts) - 1
                if parts[:depth] == list(root.parts[1:]):
                    if not parts[depth:] or parts[-1] != "..":
                        found = beneath(openat2, root, parts[depth:])
                    break
        if found is None:
            try:
                found = walk(str(raw))
            except OSError as exc:
                raise os_error(shown, exc) from None
        try:
            yield found
        finally:
            found.close()

    def _check_scope(self, shown: str, raw: Path, real: Path, roots: Sequence[Path]) -> None:
        if within(real, roots):
            return
        lexical = Path(os.path.normpath(raw))
        if within(lexical, roots) or within(lexical, self._lexical_roots):
            raise SymlinkEscape(shown, real)
        raise OutOfScope(shown, "outside the allowed roots")

    def _check_read(self, shown: str, raw: Path, found: Found) -> None:
        """Raise unless ``found`` is an existing entry inside a readable root."""
        self._check_scope(shown, raw, found.real, self._read_roots)
        if found.rest:
            raise missing(shown, found)
        if self._guard is not None:
            self._guard(found.real, False)

    def _check_write(self, shown: str, raw: Path, found: Found) -> None:
        """Raise unless ``found`` is a regular file, or a name that can be created, in a
        writable root."""
        real = found.real
        if not within(real, self._write_roots) and within(real, self._read_roots):
            raise OutOfScope(shown, "read-only (outside the writable roots)")
        self._check_scope(shown, raw, real, self._write_roots)
        if found.rest:
            if found.stop == errno.ENOTDIR:
                raise NotADirectory(shown, "a parent of the path is not a directory")
            if found.stop != errno.ENOENT:
                raise missing(shown, found)
            existing = Path(*real.parts[: len(real.parts) - len(found.rest)])
            if not within(existing, self._write_roots):
                raise NotFound(shown, "not found (the writable root does not exist)")
            if self._guard is not None:
                self._guard(real, True)
            return
        if stat.S_ISDIR(found.st.st_mode):
            raise IsADirectory(shown, "is a directory")
        if not stat.S_ISREG(found.st.st_mode):
            raise NotRegularFile(shown, f"not a regular file ({kind_of(found.st.st_mode)})")
        if self._guard is not None:
            self._guard(real, True)

    def resolve_read(self, path: str | Path) -> Path:
        """The canonical path of an existing, readable entry (file or directory)."""
        return self.lookup(path).path

    def lookup(self, path: str | Path) -> PathInfo:
        """The canonical path and kind of an existing, readable entry (file or directory)."""
        shown = os.fspath(path)
        raw = self._absolute(path)
        with self._resolved(shown, raw) as found:
            self._check_read(shown, raw, found)
            return PathInfo(found.real, stat.S_ISDIR(found.st.st_mode))

    def exists(self, path: str | Path) -> bool:
        """Whether ``path`` names an existing entry this pod may read."""
        try:
            self.lookup(path)
        except FsError:
            return False
        return True

    def resolve_write(self, path: str | Path) -> Path:
        """The canonical target of a write in a writable root; it may not exist yet."""
        shown = os.fspath(path)
        raw = self._absolute(path)
        with self._resolved(shown, raw) as found:
            self._check_write(shown, raw, found)
            return found.real

    # -- files

    def _open_file(self, shown: str, raw: Path) -> tuple[int, Path, os.stat_result]:
        """A read-only fd of the regular file ``raw`` leads to, its canonical path and stat."""
        for _ in range(RETRIES):
            with self._resolved(shown, raw) as found:
                self._check_read(shown, raw, found)
                mode = found.st.st_mode
                if stat.S_ISDIR(mode):
                    raise IsADirectory(shown, "is a directory")
                if not stat.S_ISREG(mode):
                    raise NotRegularFile(shown, f"not a regular file ({kind_of(mode)})")
                assert found.parent is not None  # only a root or "/" has none: directories
                try:
                    fd = os.open(found.real.name, READ_FLAGS, dir_fd=found.parent)
                except OSError as exc:
                    if exc.errno in CHANGED:
                        continue
                    raise os_error(shown, exc) from None
                try:
                    st = os.fstat(fd)
                except OSError as exc:
                    os.close(fd)
                    raise os_error(shown, exc) from None
                if (st.st_dev, st.st_ino) == (found.st.st_dev, found.st.st_ino):
                    return fd, found.real, st
                os.close(fd)
        raise FsIOError(shown, "I/O error: the file kept changing while it was opened")

    def read_text(self, path: str | Path, *, max_bytes: int | None = None) -> FileText:
        """The UTF-8 text of a file, at most ``max_bytes`` of it, cut on a character boundary."""
        shown = os.fspath(path)
        fd, real, st = self._open_file(shown, self._absolute(path))
        # One byte past the cap tells whether there is more, without reading the rest.
        limit = None if max_bytes is None else max(max_bytes, 0) + 1
        try:
            data = read_fd(fd, limit)
        except OSError as exc:
            raise os_error(shown, exc) from None
        finally:
            os.close(fd)
        if b"\x00" in data:
            raise BinaryFile(shown, "binary file (contains NUL bytes)")
        truncated = max_bytes is not None and len(data) > max_bytes
        kept = data[:max_bytes] if truncated else data
        decoder = codecs.getincrementaldecoder("utf-8")("strict")
        try:
            # Not final when truncated: a character split by the cut is held back, not an error.
            text = decoder.decode(kept, final=not truncated)
        except UnicodeDecodeError:
            raise BinaryFile(shown, "binary file (not UTF-8 text)") from None
        total = max(st.st_size, len(data)) if truncated else len(data)
        return FileText(real, self.display(real), text, total, truncated)

    def read_bytes(self, path: str | Path, *, max_bytes: int) -> FileBytes:
        """The bytes of a file, at most ``max_bytes`` of them (images; text goes through
        :meth:`read_text`, which refuses binary files)."""
        shown = os.fspath(path)
        fd, real, st = self._open_file(shown, self._absolute(path))
        try:
            data = read_fd(fd, max(max_bytes, 0) + 1)
        except OSError as exc:
            raise os_error(shown, exc) from None
        finally:
            os.close(fd)
        truncated = len(data) > max_bytes
        total = max(st.st_size, len(data)) if truncated else len(data)
        return FileBytes(real, self.display(real), data[:max_bytes], total, truncated)

    def write_text(self, path: str | Path, text: str) -> Path:
        """Write a UTF-8 file in a writable root, creating missing parent directories.

        The file is replaced, not rewritten (see the module docstring): atomic, and a hard link
        to a file outside the roots is broken instead of followed.
        """
        shown = os.fspath(path)
        raw = self._absolute(path)
        data = text.encode("utf-8")
        with self._resolved(shown, raw) as found:
            self._check_write(shown, raw, found)
            if found.rest:
                directory = make_dirs(shown, found)
                replace_file(shown, directory, found.rest[-1], data, None)
            else:
                assert found.parent is not None  # a root is a directory, refused above
                replace_file(shown, found.parent, found.real.name, data, found.st)
            return found.real

    # -- directories

    def _scan(self, shown: str, raw: Path) -> tuple[Path, list[DirEntry]]:
        """The canonical path of a readable directory and its entries, listed through its fd."""
        with self._resolved(shown, raw) as found:
            self._check_read(shown, raw, found)
            if not stat.S_ISDIR(found.st.st_mode):
                raise NotADirectory(shown, "not a directory")
            try:
                # "." below the directory's own fd: the very directory the walk found.
                fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=found.fd)
            except OSError as exc:
                raise os_error(shown, exc) from None
            try:
                with os.scandir(fd) as it:
                    entries = [
                        DirEntry(
                            entry.name, entry.is_dir(follow_symlinks=False), entry.is_symlink()
                        )
                        for entry in it
                    ]
            except OSError as exc:
                raise os_error(shown, exc) from None
            finally:
                os.close(fd)
            return found.real, entries

    def scan_dir(self, path: str | Path) -> list[DirEntry]:
        """Every entry of a readable directory, unfiltered and unsorted; links not followed."""
        return self._scan(os.fspath(path), self._absolute(path))[1]

    def _link_is_dir(self, link: Path) -> bool | None:
        """Whether a symlink leads to a directory; None when it leads out of the read roots."""
        try:
            with self._resolved(str(link), link) as found:
                if not within(found.real, self._read_roots):
                    return None
                return not found.rest and stat.S_ISDIR(found.st.st_mode)
        except FsError:
            return None

    def _visible(
        self, directory: Path, entries: Iterable[DirEntry], *, hidden: bool
    ) -> list[tuple[str, bool]]:
        """Visible ``(name, is_dir)`` pairs of a canonical directory's entries, sorted by name."""
        # .gitignore is the pod's own reading, not the tool's: no guard.
        plain = self
        if self._guard is not None:
            plain = copy.copy(self)
            plain._guard = None
        rules = self._gitignore.rules(
            lambda: plain.read_text(".gitignore", max_bytes=GITIGNORE_MAX_BYTES).text
        )
        return visible_entries(
            directory,
            entries,
            hidden=hidden,
            workspace=self.workspace,
            rules=rules,
            link_is_dir=self._link_is_dir,
        )

    def list_dir(self, path: str | Path, *, limit: int = 200) -> DirListing:
        """A shallow listing without hidden or ``.gitignore``-d entries, capped at ``limit``."""
        shown = os.fspath(path)
        real, entries = self._scan(shown, self._absolute(path))
        names = listing_names(self._visible(real, entries, hidden=False))
        return DirListing(real, self.display(real), names[:limit], len(names), len(names) > limit)

    def complete(self, prefix: str, *, limit: int = 50) -> list[str]:
        """Paths that start with ``prefix``, as typed; hidden entries only once a ``.`` is typed."""
        head, slash, stem = prefix.rpartition("/")
        typed_dir = head + slash
        try:
            real, entries = self._scan(prefix, self._absolute(typed_dir or "."))
        except FsError:
            return []
        visible = self._visible(real, entries, hidden=stem.startswith("."))
        return completions(typed_dir, stem, visible, limit=limit)

    def display(self, path: Path) -> str:
        """Workspace-relative posix path inside the workspace, else the absolute path."""
        if path.is_absolute() and within(path, [self.workspace]):
            return printable_name(path.relative_to(self.workspace).as_posix())
        return printable_name(str(path))
