"""The session layer's errors."""

from __future__ import annotations

from pathlib import Path

from orchestrator.errors import PodRuntimeError, SetupError


class SessionError(SetupError):
    """A session file cannot be created or read; the message names the file."""


class SessionLocked(SessionError):
    """Another live pod writes this session; the message names it."""


class SessionWriteError(PodRuntimeError):
    """A record could not be written (disk full, I/O error); nothing of it is left on disk."""

    def __init__(self, path: Path, exc: OSError) -> None:
        reason = exc.strerror or str(exc)
        super().__init__(f"cannot write the session file {path}: {reason}")
        self.path = path
        self.errno = exc.errno
