"""The pod's only door to the file system: scope checks, symlinks, FIFOs and caps in one place.

A path is resolved to its canonical form (every symlink followed) *before* the scope check, so
a link inside the workspace cannot smuggle a read or a write to a file outside it. Nothing that
is not a regular file is ever opened for reading.

Errors form one tree::

    FsError
    ├── OutOfScope          the path (as written) lies outside the allowed roots
    ├── SymlinkEscape       the path lies inside, but a symlink on it leads outside
    ├── NotFound
    ├── BrokenSymlink       a dangling symlink or a symlink loop
    ├── IsADirectory
    ├── NotADirectory
    ├── NotRegularFile      FIFO, socket, device
    ├── BinaryFile          not UTF-8, or contains NUL bytes
    ├── PermissionDenied
    └── FsIOError
"""

from __future__ import annotations

import codecs
import errno
import os
import re
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from orchestrator.errors import PodRuntimeError
from orchestrator.globs import glob_regex

_READ_CHUNK = 64 * 1024
_GITIGNORE_MAX_BYTES = 256 * 1024


# -- errors -------------------------------------------------------------------------------------


class FsError(PodRuntimeError):
    """A file access the pod refused or could not do; ``reason`` is a short human phrase."""

    def __init__(self, path: str | Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = str(path)
        self.reason = reason


class OutOfScope(FsError):
    """The path lies outside the roots this access may use."""


class SymlinkEscape(FsError):
    """A symlink inside the roots points outside them; ``target`` is where it leads."""

    def __init__(self, path: str | Path, target: Path) -> None:
        super().__init__(path, f"symlink points outside the allowed roots, to {target}")
        self.target = target


class NotFound(FsError):
    """Nothing exists at the path."""


class BrokenSymlink(FsError):
    """The path goes through a dangling symlink or a symlink loop."""


class IsADirectory(FsError):
    """A file was expected, the path is a directory."""


class NotADirectory(FsError):
    """A directory was expected, the path is something else."""


class NotRegularFile(FsError):
    """A FIFO, socket or device: never opened for reading."""


class BinaryFile(FsError):
    """The file is not UTF-8 text or contains NUL bytes."""


class PermissionDenied(FsError):
    """The operating system refused the access."""


class FsIOError(FsError):
    """Any other operating-system failure."""


# -- results ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FileText:
    """The (possibly truncated) text of a file."""

    path: Path
    display: str
    text: str
    total_bytes: int
    truncated: bool


@dataclass(frozen=True)
class DirListing:
    """A shallow, sorted, capped directory listing; directories end with ``/``."""

    path: Path
    display: str
    entries: list[str]
    total: int
    truncated: bool


# -- .gitignore ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _IgnoreRule:
    regex: re.Pattern[str]
    negate: bool
    dir_only: bool
    anchored: bool


def parse_gitignore(text: str) -> list[_IgnoreRule]:
    """The rules of a ``.gitignore`` file (a practical subset: globs, ``!``, ``/``, ``**``)."""
    rules: list[_IgnoreRule] = []
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        if negate or line.startswith("\\"):
            line = line[1:]
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        # A slash anywhere but at the end anchors the pattern to the workspace root.
        anchored = "/" in line
        line = line.lstrip("/")
        if not line:
            continue
        regex = re.compile(glob_regex(line) + r"\Z", re.DOTALL)
        rules.append(_IgnoreRule(regex, negate, dir_only, anchored))
    return rules


def is_ignored(rules: Sequence[_IgnoreRule], parts: Sequence[str], is_dir: bool) -> bool:
    """Whether a workspace-relative path is ignored; an ignored directory hides its contents."""
    for depth in range(1, len(parts) + 1):
        prefix_is_dir = depth < len(parts) or is_dir
        rel = "/".join(parts[:depth])
        ignored = False
        for rule in rules:
            if rule.dir_only and not prefix_is_dir:
                continue
            subject = rel if rule.anchored else parts[depth - 1]
            if rule.regex.match(subject):
                ignored = not rule.negate
        if ignored:
            return True
    return False


# -- the scoped file system ---------------------------------------------------------------------


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


def _canonical(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _within(path: Path, roots: Iterable[Path]) -> bool:
    return any(path == root or path.is_relative_to(root) for root in roots)


def _kind_of(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode):
        return "character device"
    if stat.S_ISBLK(mode):
        return "block device"
    return "special file"


def _os_error(path: str, exc: OSError) -> FsError:
    """Map an operating-system error to the error tree."""
    if isinstance(exc, PermissionError):
        return PermissionDenied(path, "permission denied")
    if isinstance(exc, FileNotFoundError):
        return NotFound(path, "not found")
    if isinstance(exc, NotADirectoryError):
        return NotFound(path, "not found (a path component is not a directory)")
    if isinstance(exc, IsADirectoryError):
        return IsADirectory(path, "is a directory")
    if exc.errno == errno.ELOOP:
        return BrokenSymlink(path, "symlink loop")
    if exc.errno == errno.ENXIO:
        return NotRegularFile(path, "not a regular file")
    return FsIOError(path, f"I/O error: {exc.strerror or exc}")


class ScopedFS:
    """Every file access of a pod: the workspace (read+write) plus extra read and write roots."""

    def __init__(
        self,
        workspace: Path,
        *,
        read_roots: Sequence[Path] = (),
        write_roots: Sequence[Path] = (),
    ) -> None:
        self.workspace: Path = _canonical(Path(workspace))
        # Writable roots are readable too: a pod can read back what it wrote.
        self._write_roots = [self.workspace, *(_canonical(Path(r)) for r in write_roots)]
        self._read_roots = [*self._write_roots, *(_canonical(Path(r)) for r in read_roots)]
        # The roots as given, only to tell "wrote a path outside" from "followed a link outside".
        given = [Path(workspace), *write_roots, *read_roots]
        self._lexical_roots = [Path(os.path.normpath(Path(r).absolute())) for r in given]
        self._ignore_key: tuple[int, int] | None = None
        self._ignore_rules: list[_IgnoreRule] = []

    # -- resolution

    def _absolute(self, path: str | Path) -> Path:
        text = os.fspath(path)
        if "\x00" in text:
            raise NotFound(text.replace("\x00", "\\0"), "not found (path contains a NUL byte)")
        raw = Path(text)
        return raw if raw.is_absolute() else self.workspace / raw

    def _check_scope(self, shown: str, raw: Path, real: Path, roots: Sequence[Path]) -> None:
        if _within(real, roots):
            return
        lexical = Path(os.path.normpath(raw))
        if _within(lexical, roots) or _within(lexical, self._lexical_roots):
            raise SymlinkEscape(shown, real)
        raise OutOfScope(shown, "outside the allowed roots")

    def _missing(self, shown: str, raw: Path) -> FsError:
        """NotFound, or BrokenSymlink when a dangling link on the path is the cause."""
        for candidate in (raw, *raw.parents):
            if candidate.is_symlink() and not candidate.exists():
                target = os.readlink(candidate)
                return BrokenSymlink(shown, f"broken symlink ({candidate.name} -> {target})")
        return NotFound(shown, "not found")

    def resolve_read(self, path: str | Path) -> Path:
        """The canonical path of an existing, readable entry (file or directory)."""
        shown = os.fspath(path)
        raw = self._absolute(path)
        real = _canonical(raw)
        self._check_scope(shown, raw, real, self._read_roots)
        try:
            os.stat(real)
        except FileNotFoundError:
            raise self._missing(shown, raw) from None
        except OSError as exc:
            raise _os_error(shown, exc) from None
        return real

    def exists(self, path: str | Path) -> bool:
        """Whether ``path`` names an existing entry this pod may read."""
        try:
            self.resolve_read(path)
        except FsError:
            return False
        return True

    def resolve_write(self, path: str | Path) -> Path:
        """The canonical target of a write in a writable root; it may not exist yet."""
        shown = os.fspath(path)
        raw = self._absolute(path)
        real = _canonical(raw)
        if not _within(real, self._write_roots) and _within(real, self._read_roots):
            raise OutOfScope(shown, "read-only (outside the writable roots)")
        self._check_scope(shown, raw, real, self._write_roots)
        try:
            st = os.stat(real)
        except FileNotFoundError:
            return real
        except NotADirectoryError:
            raise NotADirectory(shown, "a parent of the path is not a directory") from None
        except OSError as exc:
            raise _os_error(shown, exc) from None
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectory(shown, "is a directory")
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFile(shown, f"not a regular file ({_kind_of(st.st_mode)})")
        return real

    # -- files

    def read_text(self, path: str | Path, *, max_bytes: int | None = None) -> FileText:
        """The UTF-8 text of a file, at most ``max_bytes`` of it, cut on a character boundary."""
        shown = os.fspath(path)
        real = self.resolve_read(path)
        try:
            st = os.stat(real)
        except OSError as exc:
            raise _os_error(shown, exc) from None
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectory(shown, "is a directory")
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFile(shown, f"not a regular file ({_kind_of(st.st_mode)})")
        # One byte past the cap tells whether there is more, without reading the rest.
        limit = None if max_bytes is None else max(max_bytes, 0) + 1
        data = self._read_regular(shown, real, limit)
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

    def _read_regular(self, shown: str, real: Path, limit: int | None) -> bytes:
        # O_NONBLOCK: should the file be swapped for a FIFO after the stat, open cannot hang.
        flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(real, flags)
        except OSError as exc:
            raise _os_error(shown, exc) from None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise NotRegularFile(shown, "not a regular file")
            chunks: list[bytes] = []
            got = 0
            while limit is None or got < limit:
                want = _READ_CHUNK if limit is None else min(_READ_CHUNK, limit - got)
                chunk = os.read(fd, want)
                if not chunk:
                    break
                chunks.append(chunk)
                got += len(chunk)
            return b"".join(chunks)
        except OSError as exc:
            raise _os_error(shown, exc) from None
        finally:
            os.close(fd)

    def write_text(self, path: str | Path, text: str) -> Path:
        """Write a UTF-8 file in a writable root, creating missing parent directories."""
        shown = os.fspath(path)
        real = self.resolve_write(path)
        data = text.encode("utf-8")
        try:
            real.parent.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            raise NotADirectory(shown, "a parent of the path is not a directory") from None
        except OSError as exc:
            raise _os_error(shown, exc) from None
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        try:
            fd = os.open(real, flags, 0o666)
        except OSError as exc:
            raise _os_error(shown, exc) from None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise NotRegularFile(shown, "not a regular file")
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        except OSError as exc:
            raise _os_error(shown, exc) from None
        finally:
            os.close(fd)
        return real

    # -- directories

    def _gitignore_rules(self) -> list[_IgnoreRule]:
        path = self.workspace / ".gitignore"
        try:
            st = os.stat(path)
        except OSError:
            self._ignore_key, self._ignore_rules = None, []
            return []
        key = (st.st_mtime_ns, st.st_size)
        if key != self._ignore_key:
            try:
                text = self.read_text(".gitignore", max_bytes=_GITIGNORE_MAX_BYTES).text
            except FsError:
                text = ""
            self._ignore_key, self._ignore_rules = key, parse_gitignore(text)
        return self._ignore_rules

    def _entries(self, shown: str, directory: Path, *, hidden: bool) -> list[tuple[str, bool]]:
        """Visible ``(name, is_dir)`` pairs of a canonical directory, sorted by name."""
        rules = self._gitignore_rules()
        in_workspace = _within(directory, [self.workspace])
        found: list[tuple[str, bool]] = []
        try:
            with os.scandir(directory) as it:
                for entry in it:
                    if entry.name.startswith(".") and not hidden:
                        continue
                    if entry.is_symlink():
                        target = _canonical(Path(entry.path))
                        # Out-of-scope links are neither followed nor shown.
                        if not _within(target, self._read_roots):
                            continue
                        is_dir = target.is_dir()
                    else:
                        is_dir = entry.is_dir(follow_symlinks=False)
                    if in_workspace and rules:
                        parts = Path(entry.path).relative_to(self.workspace).parts
                        if is_ignored(rules, parts, is_dir):
                            continue
                    found.append((printable_name(entry.name), is_dir))
        except OSError as exc:
            raise _os_error(shown, exc) from None
        found.sort()
        return found

    def list_dir(self, path: str | Path, *, limit: int = 200) -> DirListing:
        """A shallow listing without hidden or ``.gitignore``-d entries, capped at ``limit``."""
        shown = os.fspath(path)
        real = self.resolve_read(path)
        if not real.is_dir():
            raise NotADirectory(shown, "not a directory")
        names = [
            name + "/" if is_dir else name
            for name, is_dir in self._entries(shown, real, hidden=False)
        ]
        return DirListing(real, self.display(real), names[:limit], len(names), len(names) > limit)

    def complete(self, prefix: str, *, limit: int = 50) -> list[str]:
        """Paths that start with ``prefix``, as typed; hidden entries only once a ``.`` is typed."""
        head, slash, stem = prefix.rpartition("/")
        typed_dir = head + slash
        try:
            directory = self.resolve_read(typed_dir or ".")
        except FsError:
            return []
        if not directory.is_dir():
            return []
        out: list[str] = []
        try:
            entries = self._entries(prefix, directory, hidden=stem.startswith("."))
        except FsError:
            return []
        for name, is_dir in entries:
            if name.startswith(stem):
                out.append(typed_dir + name + ("/" if is_dir else ""))
                if len(out) >= limit:
                    break
        return out

    def display(self, path: Path) -> str:
        """Workspace-relative posix path inside the workspace, else the absolute path."""
        if path.is_absolute() and _within(path, [self.workspace]):
            return printable_name(path.relative_to(self.workspace).as_posix())
        return printable_name(str(path))
