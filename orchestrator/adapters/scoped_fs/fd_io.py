"""Byte-level work on fds the resolver has already opened and checked: reading, creating, replacing.

Nothing here takes a path from outside or makes a scope check; :class:`~.fs.ScopedFS` does those
and passes in fds. :func:`read_fd` reads a file in chunks up to a cap, :func:`make_dirs` creates
missing parent directories one ``mkdirat`` at a time below a checked directory, and
:func:`replace_file` writes new content to a temporary file in the same directory and renames it
over the target, which makes a write atomic and breaks hard links instead of following them.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat

from orchestrator.adapters.scoped_fs.errors import (
    FsIOError,
    IsADirectory,
    NotADirectory,
    PermissionDenied,
    os_error,
)
from orchestrator.adapters.scoped_fs.resolver import LOOKUP_DIR, RETRIES, Found

READ_CHUNK = 64 * 1024


def read_fd(fd: int, limit: int | None) -> bytes:
    """All of ``fd`` from its offset, or at most ``limit`` bytes of it."""
    chunks: list[bytes] = []
    got = 0
    while limit is None or got < limit:
        want = READ_CHUNK if limit is None else min(READ_CHUNK, limit - got)
        chunk = os.read(fd, want)
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data``; ``os.write`` may take only part of it."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def make_dirs(shown: str, found: Found) -> int:
    """Create ``found.rest[:-1]`` below ``found.fd``, one ``mkdirat`` at a time; the last fd."""
    directory = found.fd
    for name in found.rest[:-1]:
        try:
            os.mkdir(name, 0o777, dir_fd=directory)
        except FileExistsError:
            pass  # made meanwhile; the no-follow open below checks what it is
        except OSError as exc:
            raise os_error(shown, exc) from None
        try:
            directory = os.open(name, LOOKUP_DIR, dir_fd=directory)
        except (NotADirectoryError, FileExistsError):
            raise NotADirectory(shown, "a parent of the path is not a directory") from None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise NotADirectory(shown, "a parent of the path is a symlink") from None
            raise os_error(shown, exc) from None
        found.owned.append(directory)
    return directory


def replace_file(
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
    for _ in range(RETRIES):
        temp = f".pod-write-{secrets.token_hex(6)}.tmp"
        try:
            fd = os.open(temp, flags, 0o666, dir_fd=directory)
            break
        except FileExistsError:
            continue
        except OSError as exc:
            raise os_error(shown, exc) from None
    else:
        raise FsIOError(shown, "I/O error: no free name for a temporary file")
    try:
        try:
            if old is not None:
                os.fchmod(fd, stat.S_IMODE(old.st_mode))
            write_all(fd, data)
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
        raise os_error(shown, exc) from None
