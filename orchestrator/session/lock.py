"""One pod per session: an exclusive ``flock`` on a ``.lock`` file that names its holder."""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path
from typing import Any

from orchestrator.session.errors import SessionError, SessionLocked


def lock_path(session_path: Path) -> Path:
    """The lock file a live pod holds for its session."""
    return session_path.with_name(session_path.name + ".lock")


def session_holder(session_path: Path) -> dict[str, Any] | None:
    """Who holds the session's lock (``pid``, ``pod``, ``socket``), or None if nobody."""
    try:
        fd = os.open(lock_path(session_path), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read_holder(fd)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def _read_holder(fd: int) -> dict[str, Any]:
    try:
        data = json.loads(os.pread(fd, 4096, 0) or b"{}")
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


class SessionLock:
    """An exclusive, advisory lock on one session, released when the holder exits (any way)."""

    def __init__(self, session_path: Path, *, holder: dict[str, Any]) -> None:
        path = lock_path(session_path)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise SessionError(f"cannot lock session {session_path}: {exc.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            other = _read_holder(fd)
            os.close(fd)
            who = ", ".join(f"{k} {other[k]}" for k in ("pod", "pid", "socket") if k in other)
            raise SessionLocked(
                f"session {session_path.name} is in use by another pod ({who or 'unknown'}); "
                "attach to it, or start with --new"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(holder).encode(), 0)
        self._fd: int | None = fd

    def release(self) -> None:
        """Give the lock up (closing the file releases it)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
