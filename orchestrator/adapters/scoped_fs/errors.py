"""The file system's errors, and how an operating-system error maps onto them."""

from __future__ import annotations

import errno
from pathlib import Path

from orchestrator.errors import PodRuntimeError


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


class RuleDenied(FsError):
    """The pod's permission rules forbid this path (see :meth:`ScopedFS.guarded`)."""


# -- results ------------------------------------------------------------------------------------


def os_error(path: str, exc: OSError) -> FsError:
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
