"""Opening a file the pod is given by path (a session, a script, a config file): a regular file
of a sane size, or one clear error at once.

A path can name a FIFO (opening it for reading waits for a writer that never comes), a device
(``/dev/zero`` reads forever) or a directory, directly or through a symlink. So the file is
opened without blocking, checked with ``fstat`` on the descriptor actually opened (no race
with a swap of the path), refused unless it is a regular file, and read only up to a limit.
Files inside the workspace go through :class:`~orchestrator.adapters.scoped_fs.ScopedFS`, which applies
the same rule; this is for paths from the command line and the pod's own state.

It sits in ``orchestrator.config`` because reading the config files is its first use and
``config`` is the lowest layer that may touch the file system (``core`` is pure); the session,
the scripted provider and the job spools above use it from here.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from pathlib import Path

from orchestrator.errors import PodRuntimeError

__all__ = [
    "CONFIG_MAX_BYTES",
    "READ_CHUNK",
    "NotARegularFile",
    "kind_of",
    "open_regular",
    "read_regular",
]

READ_CHUNK = 1 << 20

CONFIG_MAX_BYTES = 1 << 20
"""A config file larger than this is refused, not read."""


class NotARegularFile(PodRuntimeError, OSError):
    """The path is not a regular file, or is larger than its limit; ``strerror`` says which."""


def kind_of(mode: int) -> str:
    """What a file that is not a regular one is, for an error message (``st_mode`` given)."""
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode):
        return "character device"
    if stat.S_ISBLK(mode):
        return "block device"
    if stat.S_ISDIR(mode):
        return "directory"
    return "special file"


def open_regular(path: Path, flags: int = os.O_RDONLY, *, follow: bool = True) -> int:
    """A descriptor of the regular file at ``path`` (``flags`` may create it, mode 0600);
    :class:`NotARegularFile` for anything else, ``OSError`` as ``os.open`` raises it."""
    extra = os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags | extra, 0o600)
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow:
            raise NotARegularFile(errno.ELOOP, "it is a symbolic link", str(path)) from None
        raise
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise NotARegularFile(
            errno.EINVAL, f"it is not a regular file ({kind_of(mode)})", str(path)
        )
    # Blocking again: O_NONBLOCK was only for the open, and means nothing for a regular file.
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    return fd


def read_regular(path: Path, *, max_bytes: int, follow: bool = True) -> bytes:
    """The content of the regular file at ``path``, refused when over ``max_bytes``."""
    fd = open_regular(path, follow=follow)
    try:
        size = os.fstat(fd).st_size
        if size > max_bytes:
            raise NotARegularFile(
                errno.EFBIG,
                f"it is {size:,} bytes, more than the {max_bytes:,} a file of this kind may be",
                str(path),
            )
        chunks: list[bytes] = []
        read = 0
        while read <= max_bytes:  # the file may grow while it is read: stop at the limit
            chunk = os.read(fd, min(READ_CHUNK, max_bytes + 1 - read))
            if not chunk:
                break
            chunks.append(chunk)
            read += len(chunk)
        if read > max_bytes:
            raise NotARegularFile(
                errno.EFBIG, f"it grew past the {max_bytes:,} bytes allowed", str(path)
            )
        return b"".join(chunks)
    finally:
        os.close(fd)
