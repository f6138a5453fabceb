"""Race-free path resolution: ``openat2`` beneath a root, or a walk one component at a time.

See the package docstring for why and how; :func:`openat2_fn` is looked up through this
module at each access, so tests can turn it off.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import platform
import stat
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.adapters.scoped_fs.errors import BrokenSymlink, FsError, os_error

_MAX_LINKS = 40
"""Symlinks one resolution may follow, as the kernel allows; more is a loop."""

RETRIES = 3
"""Tries when something changed meanwhile: a file replaced between the walk and the open (an
editor saving), a temporary name taken."""

CHANGED = frozenset({errno.ENOENT, errno.ELOOP, errno.ENXIO})
"""How opening a name the walk just found fails when it was replaced meanwhile (gone, now a
link, now a socket)."""

O_PATH: int = getattr(os, "O_PATH", 0)
# O_PATH looks a name up without opening the file. Where it is missing, O_NONBLOCK at least
# keeps a FIFO from blocking the walk.
LOOKUP = O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
LOOKUP_DIR = LOOKUP | os.O_DIRECTORY
READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC

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
def openat2_fn() -> Openat2 | None:
    """openat2 through libc's ``syscall``, or None when this system cannot use it."""
    number = _OPENAT2_SYSCALL.get(platform.machine())
    if number is None or not sys.platform.startswith("linux") or not O_PATH:
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
        os.close(openat2(_AT_FDCWD, "/", O_PATH | os.O_DIRECTORY | os.O_CLOEXEC, 0))
    except OSError:
        return None
    return openat2


@dataclass(frozen=True)
class _Link:
    """A symlink met on the way: its name and what it points to."""

    name: str
    target: str


@dataclass
class Found:
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


def walk(raw: str) -> Found:
    """Resolve an absolute path one component at a time; never lets the kernel follow a link.

    Like ``realpath``, a component that does not exist ends the lookups: what follows it is
    taken as written (``..`` removing a missing name), so the canonical path is still known.
    """
    pending: list[tuple[str, _Link | None]] = [(part, None) for part in reversed(raw.split("/"))]
    fds = [os.open("/", LOOKUP_DIR)]
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
                fd = os.open(name, LOOKUP, dir_fd=fds[-1])
            except OSError as exc:
                if exc.errno == errno.ELOOP and not O_PATH:
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
    return Found(
        real=Path("/", *names, *rest),
        fd=fds[-1],
        st=stats[-1],
        parent=fds[-2] if len(fds) > 1 else None,
        rest=tuple(rest),
        stop=stop,
        broken=broken,
        owned=fds,
    )


def beneath(openat2: Openat2, root: Path, rel: Sequence[str]) -> Found | None:
    """Open ``root/rel`` with openat2, or None when it takes a symlink, ``..`` out, or fails.

    With neither links nor a way out of the root, the canonical path is the path as written.
    """
    owned: list[int] = []
    try:
        root_fd = openat2(
            _AT_FDCWD,
            str(root),
            O_PATH | os.O_DIRECTORY | os.O_CLOEXEC,
            _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS,
        )
        owned.append(root_fd)
        if not rel:
            return Found(root, root_fd, os.fstat(root_fd), None, owned=owned)
        parent = openat2(
            root_fd,
            "/".join(rel[:-1]) or ".",
            O_PATH | os.O_DIRECTORY | os.O_CLOEXEC,
            _RESOLVE_BENEATH | _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS,
        )
        owned.append(parent)
        real = Path(os.path.normpath(os.path.join(root, *rel)))
        try:
            fd = os.open(rel[-1], LOOKUP, dir_fd=parent)
        except FileNotFoundError:
            return Found(
                real, parent, os.fstat(parent), None, (rel[-1],), errno.ENOENT, None, owned
            )
        owned.append(fd)
        st = os.fstat(fd)
        if stat.S_ISLNK(st.st_mode):
            raise OSError(errno.ELOOP, "a symlink: the walk follows it")
        return Found(real, fd, st, parent, owned=owned)
    except OSError:
        for fd in owned:
            os.close(fd)
        return None


def within(path: Path, roots: Iterable[Path]) -> bool:
    # On strings: Path.is_relative_to parses both paths again, on every access.
    text = str(path)
    for root in roots:
        prefix = str(root)
        if text == prefix or text.startswith(prefix if prefix.endswith("/") else prefix + "/"):
            return True
    return False


def missing(shown: str, found: Found) -> FsError:
    """Why the walk could not reach the end of an in-scope path."""
    if found.stop == errno.ENOENT and found.broken is not None:
        link = found.broken
        return BrokenSymlink(shown, f"broken symlink ({link.name} -> {link.target})")
    return os_error(shown, OSError(found.stop, os.strerror(found.stop)))
