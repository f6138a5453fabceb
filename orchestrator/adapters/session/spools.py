"""Folders beside the session that output is copied to as it arrives, so a crash keeps it:
``<session>.out/`` for running tool calls, ``<session>.jobs/`` for background jobs."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from orchestrator.adapters.session.catalog import ensure_private_dir
from orchestrator.adapters.session.loading import mtime_ms
from orchestrator.config.regular_file import open_regular

__all__ = ["Spools", "ToolSpools", "safe_name"]


class Spools:
    """One session's folder of spools, ``<session><suffix>/<id>.log``.

    Output is written as it arrives, unsynced: the page cache outlives a killed pod, so after a
    crash what a call or job printed can still be read.
    """

    def __init__(self, session_path: Path, suffix: str) -> None:
        self.dir = session_path.with_name(session_path.stem + suffix)

    def create(self, key: str) -> tuple[str, int]:
        """A new, empty spool for one call or job: its file name and a write-only descriptor."""
        ensure_private_dir(self.dir)
        name = f"{safe_name(key)}.log"
        # A FIFO or link planted here would hang or redirect the writes: regular files only.
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
        return name, open_regular(self.dir / name, flags, follow=False)

    def read_at(self, name: str, offset: int, max_bytes: int) -> tuple[bytes, int] | None:
        """Up to ``max_bytes`` of a spool from ``offset``, and its full size; None when it is
        gone."""
        try:
            fd = open_regular(self.dir / safe_name(name), follow=False)
        except OSError:
            return None
        try:
            return os.pread(fd, max_bytes, offset), os.fstat(fd).st_size
        except OSError:
            return None
        finally:
            os.close(fd)

    def size(self, name: str) -> int:
        """A spool's size in bytes (0 when it is gone)."""
        try:
            return (self.dir / safe_name(name)).lstat().st_size
        except OSError:
            return 0

    def mtime_ms(self, name: str) -> int:
        """When the call or job last wrote output (0 when unknown)."""
        return mtime_ms(self.dir / safe_name(name))

    def remove(self, name: str) -> None:
        """Delete a spool whose output is no longer needed."""
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


class ToolSpools(Spools):
    """The spools of running tool calls, ``<session>.out/``; every start clears them once
    crashed calls have their results."""

    def __init__(self, session_path: Path) -> None:
        super().__init__(session_path, ".out")

    def read(self, name: str, max_bytes: int) -> tuple[str, int] | None:
        """The first ``max_bytes`` of a spool as text and its full size; None when it is gone."""
        read = self.read_at(name, 0, max_bytes)
        return None if read is None else (read[0].decode("utf-8", "replace"), read[1])


def safe_name(name: str) -> str:
    """``name`` as a file name that stays inside the spool folder."""
    # Call ids come from the model: never let one name a path outside the spool folder.
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name).lstrip(".") or "_"
