"""The pod's only door to the file system: scope checks, symlinks, FIFOs and caps in one place.

Race-free resolution. Every access resolves its path and opens it in one step, so what is read,
written or listed is provably inside an allowed root, even while someone swaps a directory for a
symlink between two system calls:

* Where ``openat2(2)`` works (Linux 5.6+; probed once, skipped when missing or blocked by a
  seccomp filter), a path that starts with a root is opened relative to an fd of that root with
  ``RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS``: the kernel refuses any ``..`` or link that could
  leave it. The root's fd itself is opened with ``RESOLVE_NO_SYMLINKS``, so it is the directory
  its canonical path names. Anything the kernel refuses goes to the walk below, which also
  decides which error to report.
* Otherwise the path is walked one component at a time from an fd of ``/``: each name is opened
  with ``O_PATH | O_NOFOLLOW`` relative to the fd before it, so the kernel never follows a link
  on its own; a symlink is read with ``readlinkat`` and its target spliced into the components
  still to walk (an absolute target restarts at ``/``); ``..`` steps back to the previous fd.
  The walk thus knows the canonical path of every fd it holds. At most 40 links are followed.

The scope check is made on the canonical path of the fd that is then used; a swap after the
check changes nothing, because the read or write goes through the fd, not the path again.
Symlinks that stay inside the roots are followed; one that leads outside is a SymlinkEscape.
``O_PATH`` does not open the file itself, so a FIFO or a device is never opened: a regular file
is opened for reading relative to its directory's fd and checked to be the inode the walk found.

Writes never change a file in place. The new content goes to a temporary file in the same
directory (created through the directory's fd), which then replaces the target (``renameat``).
That is atomic (readers see the old or the new file; a crash or a full disk leaves the old one),
and it breaks hard links: a workspace name hard-linked to a file outside gets a new inode, and
the outside file stays byte-identical. Refusing ``st_nlink > 1`` would stop that escape too,
but would also refuse ordinary files that happen to have two names. The file's mode is kept;
its owner, extended attributes and other hard links are not, and the directory must be
writable. Missing parent directories are created one by one through the fd of the one before.

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
import contextlib
import ctypes
import errno
import functools
import os
import platform
import secrets
import stat
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.errors import PodRuntimeError
from orchestrator.globs import compile_glob
from orchestrator.safe_regex import PatternError, WholeMatchSet

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


@dataclass(frozen=True)
class PathInfo:
    """An existing entry: its canonical path and whether it is a directory."""

    path: Path
    is_dir: bool


@dataclass(frozen=True)
class DirEntry:
    """One raw directory entry; ``is_dir`` and ``is_symlink`` describe the entry, not a target."""

    name: str
    is_dir: bool
    is_symlink: bool


# -- .gitignore ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _IgnoreRule:
    source: str
    """The rule's regex (from :func:`glob_regex`), matched against a whole subject."""
    negate: bool
    dir_only: bool
    anchored: bool


class IgnoreRules:
    """Parsed ``.gitignore`` rules; the last rule that matches a path decides.

    The rules are matched with RE2 sets, one call per subject for all rules: the file is the
    workspace's (or the model's, through write_file), so a rule must not be able to freeze the
    pod by backtracking, and it is checked for every path a walk lists.
    """

    def __init__(self, rules: Sequence[_IgnoreRule] = ()) -> None:
        self._rules = list(rules)
        self._by_name = [i for i, rule in enumerate(self._rules) if not rule.anchored]
        self._by_path = [i for i, rule in enumerate(self._rules) if rule.anchored]
        self._names = WholeMatchSet([self._rules[i].source for i in self._by_name])
        self._paths = WholeMatchSet([self._rules[i].source for i in self._by_path])

    def __len__(self) -> int:
        return len(self._rules)

    def last_match(self, name: str, rel: str, is_dir: bool) -> _IgnoreRule | None:
        """The last rule matching an entry (``name``, workspace-relative ``rel``), if any."""
        hits = [self._by_name[i] for i in self._names.matching(name)]
        hits += [self._by_path[i] for i in self._paths.matching(rel)]
        hits = [i for i in hits if is_dir or not self._rules[i].dir_only]
        return self._rules[max(hits)] if hits else None


def parse_gitignore(text: str) -> IgnoreRules:
    """The rules of a ``.gitignore`` file (a practical subset: globs, ``!``, ``/``, ``**``).

    A line that is not a valid pattern is skipped, as git does, instead of breaking every
    listing.
    """
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
        try:
            compiled = compile_glob(line)
        except PatternError:
            continue
        rules.append(_IgnoreRule(compiled.source, negate, dir_only, anchored))
    try:
        return IgnoreRules(rules)
    except PatternError:
        # Too many rules for RE2's memory budget (the file is capped at 256 KiB): show
        # everything rather than fail every listing.
        return IgnoreRules()


def is_ignored(rules: IgnoreRules, parts: Sequence[str], is_dir: bool) -> bool:
    """Whether a workspace-relative path is ignored; an ignored directory hides its contents."""
    for depth in range(1, len(parts) + 1):
        prefix_is_dir = depth < len(parts) or is_dir
        rule = rules.last_match(parts[depth - 1], "/".join(parts[:depth]), prefix_is_dir)
        if rule is not None and not rule.negate:
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


# -- race-free resolution -----------------------------------------------------------------------

_MAX_LINKS = 40
"""Symlinks one resolution may follow, as the kernel allows; more is a loop."""

_RETRIES = 3
"""Tries when something changed meanwhile: a file replaced between the walk and the open (an
editor saving), a temporary name taken."""

_CHANGED = frozenset({errno.ENOENT, errno.ELOOP, errno.ENXIO})
"""How opening a name the walk just found fails when it was replaced meanwhile (gone, now a
link, now a socket)."""

_O_PATH: int = getattr(os, "O_PATH", 0)
# O_PATH looks a name up without opening the file. Where it is missing, O_NONBLOCK at least
# keeps a FIFO from blocking the walk.
_LOOKUP = _O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_LOOKUP_DIR = _LOOKUP | os.O_DIRECTORY
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC

_AT_FDCWD = -100
_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_NO_SYMLINKS = 0x04
_RESOLVE_BENEATH = 0x08
_OPENAT2_SYSCALL = {"x86_64": 437, "aarch64": 437, "arm64": 437, "riscv64": 437}
"""openat2's number; 437 on every architecture with the unified table (not alpha, ia64, mips)."""

Openat2 = Callable[[int, str, int, int], int]
"""``openat2(dir_fd, path, flags, resolve) -> fd``, raising OSError."""


class _OpenHow(ctypes.Structure):
    _fields_ = (
        ("flags", ctypes.c_uint64),
        ("mode", ctypes.c_uint64),
        ("resolve", ctypes.c_uint64),
    )


@functools.cache
def _openat2_fn() -> Openat2 | None:
    """openat2 through libc's ``syscall``, or None when this system cannot use it."""
    number = _OPENAT2_SYSCALL.get(platform.machine())
    if number is None or not sys.platform.startswith("linux") or not _O_PATH:
        return None
    try:
        syscall = ctypes.CDLL(None, use_errno=True).syscall
    except (OSError, AttributeError):
        return None
    syscall.restype = ctypes.c_long

    def openat2(dir_fd: int, path: str, flags: int, resolve: int) -> int:
        how = _OpenHow(flags, 0, resolve)
        fd = syscall(
            ctypes.c_long(number),
            ctypes.c_long(dir_fd),
            os.fsencode(path),
            ctypes.byref(how),
            ctypes.c_size_t(ctypes.sizeof(how)),
        )
        if fd < 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code), path)
        return int(fd)

    try:
        # ENOSYS on kernels before 5.6; EPERM (or ENOSYS) where a seccomp filter blocks it.
        os.close(openat2(_AT_FDCWD, "/", _O_PATH | os.O_DIRECTORY | os.O_CLOEXEC, 0))
    except OSError:
        return None
    return openat2


@dataclass(frozen=True)
class _Link:
    """A symlink met on the way: its name and what it points to."""

    name: str
    target: str


@dataclass
class _Found:
    """Where a path leads, with ``O_PATH`` fds that pin it; close with :meth:`close`.

    ``fd`` is the deepest entry of the path that exists, ``real`` the canonical path of the
    whole path (``rest`` appended to where ``fd`` is). ``rest`` is empty when everything exists.
    """

    real: Path
    fd: int
    st: os.stat_result
    parent: int | None
    """The fd of the directory that holds ``fd`` (None for ``/`` or a root opened alone)."""
    rest: tuple[str, ...] = ()
    """Components below ``fd`` that do not exist, or could not be looked up (see ``stop``)."""
    stop: int = 0
    """The errno that ended the walk before the end (0 when the whole path exists)."""
    broken: _Link | None = None
    """The symlink whose target is missing, when that is why ``rest`` is not empty."""
    owned: list[int] = field(default_factory=list)

    def close(self) -> None:
        for fd in self.owned:
            os.close(fd)
        self.owned.clear()


def _walk(raw: str) -> _Found:
    """Resolve an absolute path one component at a time; never lets the kernel follow a link.

    Like ``realpath``, a component that does not exist ends the lookups: what follows it is
    taken as written (``..`` removing a missing name), so the canonical path is still known.
    """
    pending: list[tuple[str, _Link | None]] = [(part, None) for part in reversed(raw.split("/"))]
    fds = [os.open("/", _LOOKUP_DIR)]
    names: list[str] = []
    stats = [os.fstat(fds[0])]
    rest: list[str] = []
    stop = 0
    broken: _Link | None = None
    links = 0
    try:
        while pending:
            name, origin = pending.pop()
            if name in ("", "."):
                continue
            if rest:
                # Below a missing name only the text is left: ``..`` removes the name before it.
                if name != "..":
                    rest.append(name)
                    continue
                rest.pop()
                if not rest:
                    stop, broken = 0, None
                continue
            if name == "..":
                if len(fds) > 1:
                    os.close(fds.pop())
                    names.pop()
                    stats.pop()
                continue
            try:
                fd = os.open(name, _LOOKUP, dir_fd=fds[-1])
            except OSError as exc:
                if exc.errno == errno.ELOOP and not _O_PATH:
                    # Without O_PATH, O_NOFOLLOW fails on a link instead of opening it.
                    fd = -1
                else:
                    rest.append(name)
                    stop = exc.errno or errno.EIO
                    broken = origin if stop == errno.ENOENT else None
                    continue
            try:
                st = os.fstat(fd) if fd >= 0 else os.lstat(name, dir_fd=fds[-1])
            except BaseException:
                if fd >= 0:
                    os.close(fd)
                raise
            if fd >= 0 and not stat.S_ISLNK(st.st_mode):
                fds.append(fd)
                names.append(name)
                stats.append(st)
                continue
            if fd >= 0:
                os.close(fd)
            links += 1
            if links > _MAX_LINKS:
                rest.append(name)
                stop, broken = errno.ELOOP, None
                continue
            try:
                target = os.readlink(name, dir_fd=fds[-1])
            except OSError:
                # No longer a link (swapped since the lookup): look the name up again.
                pending.append((name, origin))
                continue
            link = _Link(name, target)
            if target.startswith("/"):
                while len(fds) > 1:
                    os.close(fds.pop())
                    names.pop()
                    stats.pop()
            pending.extend((part, link) for part in reversed(target.split("/")))
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    return _Found(
        real=Path("/", *names, *rest),
        fd=fds[-1],
        st=stats[-1],
        parent=fds[-2] if len(fds) > 1 else None,
        rest=tuple(rest),
        stop=stop,
        broken=broken,
        owned=fds,
    )


def _beneath(openat2: Openat2, root: Path, rel: Sequence[str]) -> _Found | None:
    """Open ``root/rel`` with openat2, or None when it takes a symlink, ``..`` out, or fails.

    With neither links nor a way out of the root, the canonical path is the path as written.
    """
    owned: list[int] = []
    try:
        root_fd = openat2(
            _AT_FDCWD,
            str(root),
            _O_PATH | os.O_DIRECTORY | os.O_CLOEXEC,
            _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS,
        )
        owned.append(root_fd)
        if not rel:
            return _Found(root, root_fd, os.fstat(root_fd), None, owned=owned)
        parent = openat2(
            root_fd,
            "/".join(rel[:-1]) or ".",
            _O_PATH | os.O_DIRECTORY | os.O_CLOEXEC,
            _RESOLVE_BENEATH | _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS,
        )
        owned.append(parent)
        real = Path(os.path.normpath(os.path.join(root, *rel)))
        try:
            fd = os.open(rel[-1], _LOOKUP, dir_fd=parent)
        except FileNotFoundError:
            return _Found(
                real, parent, os.fstat(parent), None, (rel[-1],), errno.ENOENT, None, owned
            )
        owned.append(fd)
        st = os.fstat(fd)
        if stat.S_ISLNK(st.st_mode):
            raise OSError(errno.ELOOP, "a symlink: the walk follows it")
        return _Found(real, fd, st, parent, owned=owned)
    except OSError:
        for fd in owned:
            os.close(fd)
        return None


def _within(path: Path, roots: Iterable[Path]) -> bool:
    # On strings: Path.is_relative_to parses both paths again, on every access.
    text = str(path)
    for root in roots:
        prefix = str(root)
        if text == prefix or text.startswith(prefix if prefix.endswith("/") else prefix + "/"):
            return True
    return False


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


def _missing(shown: str, found: _Found) -> FsError:
    """Why the walk could not reach the end of an in-scope path."""
    if found.stop == errno.ENOENT and found.broken is not None:
        link = found.broken
        return BrokenSymlink(shown, f"broken symlink ({link.name} -> {link.target})")
    return _os_error(shown, OSError(found.stop, os.strerror(found.stop)))


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


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
        self._ignore_key: tuple[int, int] | None = None
        self._ignore_rules = IgnoreRules()

    # -- resolution

    def _absolute(self, path: str | Path) -> Path:
        text = os.fspath(path)
        if "\x00" in text:
            raise NotFound(text.replace("\x00", "\\0"), "not found (path contains a NUL byte)")
        raw = Path(text)
        return raw if raw.is_absolute() else self.workspace / raw

    @contextlib.contextmanager
    def _resolved(self, shown: str, raw: Path) -> Iterator[_Found]:
        """The one resolver: where ``raw`` leads, pinned by fds that are closed on exit."""
        found = None
        openat2 = _openat2_fn()
        if openat2 is not None:
            parts = [p for p in str(raw).split("/") if p and p != "."]
            for root in self._roots_by_depth:
                depth = len(root.parts) - 1
                if parts[:depth] == list(root.parts[1:]):
                    if not parts[depth:] or parts[-1] != "..":
                        found = _beneath(openat2, root, parts[depth:])
                    break
        if found is None:
            try:
                found = _walk(str(raw))
            except OSError as exc:
                raise _os_error(shown, exc) from None
        try:
            yield found
        finally:
            found.close()

    def _check_scope(self, shown: str, raw: Path, real: Path, roots: Sequence[Path]) -> None:
        if _within(real, roots):
            return
        lexical = Path(os.path.normpath(raw))
        if _within(lexical, roots) or _within(lexical, self._lexical_roots):
            raise SymlinkEscape(shown, real)
        raise OutOfScope(shown, "outside the allowed roots")

    def _check_read(self, shown: str, raw: Path, found: _Found) -> None:
        """Raise unless ``found`` is an existing entry inside a readable root."""
        self._check_scope(shown, raw, found.real, self._read_roots)
        if found.rest:
            raise _missing(shown, found)

    def _check_write(self, shown: str, raw: Path, found: _Found) -> None:
        """Raise unless ``found`` is a regular file, or a name that can be created, in a
        writable root."""
        real = found.real
        if not _within(real, self._write_roots) and _within(real, self._read_roots):
            raise OutOfScope(shown, "read-only (outside the writable roots)")
        self._check_scope(shown, raw, real, self._write_roots)
        if found.rest:
            if found.stop == errno.ENOTDIR:
                raise NotADirectory(shown, "a parent of the path is not a directory")
            if found.stop != errno.ENOENT:
                raise _missing(shown, found)
            existing = Path(*real.parts[: len(real.parts) - len(found.rest)])
            if not _within(existing, self._write_roots):
                raise NotFound(shown, "not found (the writable root does not exist)")
            return
        if stat.S_ISDIR(found.st.st_mode):
            raise IsADirectory(shown, "is a directory")
        if not stat.S_ISREG(found.st.st_mode):
            raise NotRegularFile(shown, f"not a regular file ({_kind_of(found.st.st_mode)})")

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
        for _ in range(_RETRIES):
            with self._resolved(shown, raw) as found:
                self._check_read(shown, raw, found)
                mode = found.st.st_mode
                if stat.S_ISDIR(mode):
                    raise IsADirectory(shown, "is a directory")
                if not stat.S_ISREG(mode):
                    raise NotRegularFile(shown, f"not a regular file ({_kind_of(mode)})")
                assert found.parent is not None  # only a root or "/" has none: directories
                try:
                    fd = os.open(found.real.name, _READ, dir_fd=found.parent)
                except OSError as exc:
                    if exc.errno in _CHANGED:
                        continue
                    raise _os_error(shown, exc) from None
                try:
                    st = os.fstat(fd)
                except OSError as exc:
                    os.close(fd)
                    raise _os_error(shown, exc) from None
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
            data = self._read_fd(fd, limit)
        except OSError as exc:
            raise _os_error(shown, exc) from None
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

    @staticmethod
    def _read_fd(fd: int, limit: int | None) -> bytes:
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
                directory = self._make_dirs(shown, found)
                self._replace(shown, directory, found.rest[-1], data, None)
            else:
                assert found.parent is not None  # a root is a directory, refused above
                self._replace(shown, found.parent, found.real.name, data, found.st)
            return found.real

    @staticmethod
    def _make_dirs(shown: str, found: _Found) -> int:
        """Create ``found.rest[:-1]`` below ``found.fd``, one ``mkdirat`` at a time; the last fd."""
        directory = found.fd
        for name in found.rest[:-1]:
            try:
                os.mkdir(name, 0o777, dir_fd=directory)
            except FileExistsError:
                pass  # made meanwhile; the no-follow open below checks what it is
            except OSError as exc:
                raise _os_error(shown, exc) from None
            try:
                directory = os.open(name, _LOOKUP_DIR, dir_fd=directory)
            except (NotADirectoryError, FileExistsError):
                raise NotADirectory(shown, "a parent of the path is not a directory") from None
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise NotADirectory(shown, "a parent of the path is a symlink") from None
                raise _os_error(shown, exc) from None
            found.owned.append(directory)
        return directory

    @staticmethod
    def _replace(
        shown: str, directory: int, name: str, data: bytes, old: os.stat_result | None
    ) -> None:
        """Put ``data`` at ``name`` in ``directory`` by replacing it with a new file."""
        effective = os.access in os.supports_effective_ids
        if old is not None and not os.access(
            name, os.W_OK, dir_fd=directory, effective_ids=effective, follow_symlinks=False
        ):
            # A replace needs only the directory to be writable; honour the file's own mode.
            raise PermissionDenied(shown, "permission denied")
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        for _ in range(_RETRIES):
            temp = f".pod-write-{secrets.token_hex(6)}.tmp"
            try:
                fd = os.open(temp, flags, 0o666, dir_fd=directory)
                break
            except FileExistsError:
                continue
            except OSError as exc:
                raise _os_error(shown, exc) from None
        else:
            raise FsIOError(shown, "I/O error: no free name for a temporary file")
        try:
            try:
                if old is not None:
                    os.fchmod(fd, stat.S_IMODE(old.st_mode))
                _write_all(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(temp, name, src_dir_fd=directory, dst_dir_fd=directory)
        except OSError as exc:
            # Already renamed, or the directory is gone: then there is nothing left to tidy.
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=directory)
            if isinstance(exc, IsADirectoryError):
                raise IsADirectory(shown, "is a directory") from None
            raise _os_error(shown, exc) from None

    # -- directories

    def _gitignore_rules(self) -> IgnoreRules:
        # A stat by path is enough here: it only keys the cache; the rules are read via read_text.
        path = self.workspace / ".gitignore"
        try:
            st = os.stat(path)
        except OSError:
            self._ignore_key, self._ignore_rules = None, IgnoreRules()
            return self._ignore_rules
        key = (st.st_mtime_ns, st.st_size)
        if key != self._ignore_key:
            try:
                text = self.read_text(".gitignore", max_bytes=_GITIGNORE_MAX_BYTES).text
            except FsError:
                text = ""
            self._ignore_key, self._ignore_rules = key, parse_gitignore(text)
        return self._ignore_rules

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
                raise _os_error(shown, exc) from None
            try:
                with os.scandir(fd) as it:
                    entries = [
                        DirEntry(
                            entry.name, entry.is_dir(follow_symlinks=False), entry.is_symlink()
                        )
                        for entry in it
                    ]
            except OSError as exc:
                raise _os_error(shown, exc) from None
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
                if not _within(found.real, self._read_roots):
                    return None
                return not found.rest and stat.S_ISDIR(found.st.st_mode)
        except FsError:
            return None

    def _visible(
        self, directory: Path, entries: Iterable[DirEntry], *, hidden: bool
    ) -> list[tuple[str, bool]]:
        """Visible ``(name, is_dir)`` pairs of a canonical directory's entries, sorted by name."""
        rules = self._gitignore_rules()
        in_workspace = _within(directory, [self.workspace])
        found: list[tuple[str, bool]] = []
        for entry in entries:
            if entry.name.startswith(".") and not hidden:
                continue
            is_dir = entry.is_dir
            if entry.is_symlink:
                # Out-of-scope links are neither followed nor shown.
                leads_to_dir = self._link_is_dir(directory / entry.name)
                if leads_to_dir is None:
                    continue
                is_dir = leads_to_dir
            if in_workspace and rules:
                parts = (directory / entry.name).relative_to(self.workspace).parts
                if is_ignored(rules, parts, is_dir):
                    continue
            found.append((printable_name(entry.name), is_dir))
        found.sort()
        return found

    def list_dir(self, path: str | Path, *, limit: int = 200) -> DirListing:
        """A shallow listing without hidden or ``.gitignore``-d entries, capped at ``limit``."""
        shown = os.fspath(path)
        real, entries = self._scan(shown, self._absolute(path))
        names = [
            name + "/" if is_dir else name
            for name, is_dir in self._visible(real, entries, hidden=False)
        ]
        return DirListing(real, self.display(real), names[:limit], len(names), len(names) > limit)

    def complete(self, prefix: str, *, limit: int = 50) -> list[str]:
        """Paths that start with ``prefix``, as typed; hidden entries only once a ``.`` is typed."""
        head, slash, stem = prefix.rpartition("/")
        typed_dir = head + slash
        try:
            real, entries = self._scan(prefix, self._absolute(typed_dir or "."))
        except FsError:
            return []
        out: list[str] = []
        for name, is_dir in self._visible(real, entries, hidden=stem.startswith(".")):
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
