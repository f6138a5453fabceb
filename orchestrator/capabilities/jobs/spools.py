"""Files beside the session that background jobs' output goes to: ``<session>.jobs/<id>.log``.

Apart from the tool spools (``<session>.out/``), which every start clears once crashed calls
have their results: a job's spool must outlive that, until the job's end is reported.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from orchestrator.adapters.session import ensure_private_dir
from orchestrator.adapters.session.loading import mtime_ms
from orchestrator.adapters.session.spools import safe_name
from orchestrator.config.regular_file import open_regular


class JobSpools:
    """The folder of one session's job spools."""

    def __init__(self, session_path: Path) -> None:
        self.dir = session_path.with_name(session_path.stem + ".jobs")

    def create(self, job_id: str) -> tuple[str, int]:
        """A new, empty spool for one job: its file name and a write-only descriptor."""
        ensure_private_dir(self.dir)
        name = f"{safe_name(job_id)}.log"
        # A FIFO or link planted here would hang or redirect the writes: regular files only.
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
        return name, open_regular(self.dir / name, flags, follow=False)

    def read(self, name: str, offset: int, max_bytes: int) -> bytes:
        """Up to ``max_bytes`` of a spool from ``offset`` (empty when it is gone)."""
        try:
            fd = open_regular(self.dir / safe_name(name), follow=False)
        except OSError:
            return b""
        try:
            return os.pread(fd, max_bytes, offset)
        except OSError:
            return b""
        finally:
            os.close(fd)

    def size(self, name: str) -> int:
        """A spool's size in bytes (0 when it is gone)."""
        try:
            return (self.dir / safe_name(name)).lstat().st_size
        except OSError:
            return 0

    def mtime_ms(self, name: str) -> int:
        """When the job last printed (0 when unknown)."""
        return mtime_ms(self.dir / safe_name(name))

    def remove(self, name: str) -> None:
        """Delete a spool whose job is over and reported."""
        with contextlib.suppress(OSError):
            (self.dir / safe_name(name)).unlink()

    def clear(self, keep: frozenset[str] = frozenset()) -> None:
        """Delete every spool but ``keep`` (and the folder, once empty)."""
        try:
            entries = list(os.scandir(self.dir))
        except OSError:
            return
        for entry in entries:
            if entry.name not in keep:
                self.remove(entry.name)
        if not keep:
            with contextlib.suppress(OSError):
                self.dir.rmdir()
