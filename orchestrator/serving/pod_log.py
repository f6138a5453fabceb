"""The pod's log file, capped: whatever fills it (logging, a traceback, a library's print, a
child process that inherited stderr) rotates it at ``max_bytes`` into one older file.

A pod started in the background (``pod chat``, ``pod run``, ``pod acp``) writes its stdout and
stderr to ``<runtime dir>/<name>.log``. A chatty MCP server once made that 576 MB. A logging
handler alone would cap only what goes through ``logging``, so the pod instead points its
file descriptors 1 and 2 at a pipe, and a thread copies the pipe into the file, rotating it.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
from pathlib import Path

from orchestrator.config.paths import open_private_log

LOG_MAX_BYTES = 10 * 1024 * 1024
"""The size at which the log is rotated: ``<name>.log`` becomes ``<name>.log.1`` (replacing an
older one), so a pod's logs never take more than twice this."""


class CappedLog:
    """Appends to ``path``; past ``max_bytes`` it becomes ``path.1`` and a new file begins."""

    def __init__(self, path: Path, max_bytes: int = LOG_MAX_BYTES) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self._fd = open_private_log(path)
        self._size = os.fstat(self._fd).st_size

    @property
    def backup(self) -> Path:
        """Where the previous part of the log is kept."""
        return self.path.with_name(self.path.name + ".1")

    def write(self, data: bytes) -> None:
        """Write all of ``data``, rotating first when it would pass the cap."""
        if self._size and self._size + len(data) > self.max_bytes:
            self._rotate()
        if len(data) > self.max_bytes:
            # One write larger than the cap: its end is what explains what happened last.
            data = b"[... cut to the log's size cap]\n" + data[-(self.max_bytes // 2) :]
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]
        self._size += len(data)

    def _rotate(self) -> None:
        os.close(self._fd)
        # A link planted at the backup's name is replaced, never followed.
        with contextlib.suppress(FileNotFoundError):  # removed by someone: start afresh
            os.replace(self.path, self.backup)
        self._fd = open_private_log(self.path)
        self._size = 0

    def close(self) -> None:
        """Close the file."""
        with contextlib.suppress(OSError):
            os.close(self._fd)


class StdStreamsToLog:
    """File descriptors 1 and 2 of this process, and of the children that inherit them,
    written to a :class:`CappedLog` by a thread."""

    def __init__(self, log: CappedLog) -> None:
        self.log = log
        read_end, write_end = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        # Put back at close, so the last words of a process that is exiting still land.
        self._saved: tuple[int, int] | None = (os.dup(1), os.dup(2))
        os.dup2(write_end, 1)
        os.dup2(write_end, 2)
        os.close(write_end)
        self._read_end = read_end
        self._thread = threading.Thread(target=self._copy, name="pod-log", daemon=True)
        self._thread.start()

    def _copy(self) -> None:
        # Read on whatever happens to the file: a pipe nobody reads would block every write
        # to stderr, and one closed would fail them.
        while chunk := os.read(self._read_end, 1 << 16):
            with contextlib.suppress(OSError):  # a full disk: these lines are lost, not the pod
                self.log.write(chunk)
        os.close(self._read_end)

    def close(self, timeout_s: float = 1.0) -> None:
        """Flush what this process wrote, put stdout and stderr back as they were, and let the
        thread copy the rest (children that still hold the pipe get up to ``timeout_s``)."""
        if self._saved is None:
            return
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
            sys.stderr.flush()
        for fd, saved in zip((1, 2), self._saved, strict=True):
            os.dup2(saved, fd)
            os.close(saved)
        self._saved = None
        self._thread.join(timeout_s)
        if not self._thread.is_alive():
            self.log.close()


def log_to(path: Path, max_bytes: int = LOG_MAX_BYTES) -> StdStreamsToLog:
    """Send everything this process writes on stdout and stderr to ``path``, capped;
    raises :class:`orchestrator.config.paths.UnsafePathError` when the path is not safe to write.
    The streams are put back when the process exits."""
    streams = StdStreamsToLog(CappedLog(path, max_bytes))
    atexit.register(streams.close)
    return streams
