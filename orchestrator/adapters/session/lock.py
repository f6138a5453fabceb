"""One pod per session: an exclusive ``flock`` on the session file itself, and a ``.lock`` file
beside it that names the holder.

The lock belongs to the file, not to a path: ``flock`` locks the inode an open file refers to,
so a second pod that reaches the same session through a symlink or a hard link (another path,
the same device and inode) is refused too. Locking a ``.lock`` file named after the path would
let both run, and each would number its items over the other's. The holder's description lives
beside the session's real path (symlinks resolved), so a pod refused through a symlink is told
who holds it; through a hard link it may only hear "another pod".

A lock whose named holder has exited is waited for a moment before the session counts as
locked: a pod killed while it forked a command leaves the half-started child holding it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import stat
import time
from pathlib import Path
from typing import Any

from orchestrator.adapters.procs.supervisor import exited
from orchestrator.adapters.session.errors import SessionError, SessionLocked


def lock_path(session_path: Path) -> Path:
    """The file that names the pod holding a session (beside its real path)."""
    real = Path(os.path.realpath(session_path))
    return real.with_name(real.name + ".lock")


def session_holder(session_path: Path) -> dict[str, Any] | None:
    """Who holds the session (``pid``, ``pod``, ``socket``; ``{}`` when unknown), or None if
    nobody does."""
    try:
        fd = os.open(session_path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read_holder(session_path)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def _read_holder(session_path: Path) -> dict[str, Any]:
    try:
        fd = os.open(lock_path(session_path), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return {}
    try:
        data = json.loads(os.pread(fd, 4096, 0) or b"{}")
    except (OSError, ValueError):
        return {}
    finally:
        os.close(fd)
    return data if isinstance(data, dict) else {}


MACHINE = socket.gethostname()
"""Named in the holder's description: its pid means something only here."""

LEFT_BY_THE_DEAD_WAIT_S = 2.0
"""How long a lock whose named holder has exited is waited for before the session counts as
locked: a pod killed while it forked a command leaves the child holding the lock (its copy
of the pod's descriptor) until the child execs, for milliseconds to tens of them."""


def _flock(fd: int, session_path: Path) -> None:
    """Lock ``fd`` exclusively; BlockingIOError while another pod holds it."""
    deadline: float | None = None
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            holder = _read_holder(session_path)
            pid = holder.get("pid")
            # A pid names a process of its own machine only (sessions on a shared disk).
            here = holder.get("machine", MACHINE) == MACHINE
            if not here or not isinstance(pid, int) or not exited(pid):
                raise
            deadline = deadline or time.monotonic() + LEFT_BY_THE_DEAD_WAIT_S
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.02)


class SessionLock:
    """An exclusive, advisory lock on one session, released when the holder exits (any way)."""

    def __init__(self, session_path: Path, *, holder: dict[str, Any]) -> None:
        try:
            # The session file itself (created empty if new): its inode is what is locked.
            # O_NONBLOCK: a FIFO planted at the path must fail below, not hang the open.
            flags = os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC | os.O_NONBLOCK
            fd = os.open(session_path, flags, 0o600)
        except OSError as exc:
            raise SessionError(f"cannot lock session {session_path}: {exc.strerror}") from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise SessionError(f"cannot lock session {session_path}: it is not a regular file")
        try:
            _flock(fd, session_path)
        except BlockingIOError:
            os.close(fd)
            other = _read_holder(session_path)
            who = ", ".join(f"{k} {other[k]}" for k in ("pod", "pid", "socket") if k in other)
            raise SessionLocked(
                f"session {session_path.name} is in use by another pod ({who or 'unknown'}); "
                "attach to it, or start with --new"
            ) from None
        self._fd: int | None = fd
        self._lock_file = lock_path(session_path)
        self._describe(session_path, holder)

    @staticmethod
    def _describe(session_path: Path, holder: dict[str, Any]) -> None:
        """Name the holder for pods refused later (a courtesy: the flock is the lock)."""
        try:
            fd = os.open(
                lock_path(session_path),
                os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC,
                0o600,
            )
        except OSError:
            return
        try:
            os.write(fd, json.dumps({**holder, "machine": MACHINE}).encode())
        except OSError:
            pass
        finally:
            os.close(fd)

    def release(self) -> None:
        """Give the lock up (closing the file releases it) and remove the holder's file.

        The file goes while the lock is still held, so it is never the description a next
        holder just wrote. A holder that dies leaves it behind: it is read only while someone
        holds the lock, so a stale one is never believed.
        """
        if self._fd is not None:
            with contextlib.suppress(OSError):
                self._lock_file.unlink()
            os.close(self._fd)
            self._fd = None
