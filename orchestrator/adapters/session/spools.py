"""Files beside the session that running tools copy their output to, so a crash keeps it."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from orchestrator.adapters.session.catalog import ensure_private_dir
from orchestrator.adapters.session.loading import mtime_ms
from orchestrator.config.regular_file import open_regular


class ToolSpools:
    """Files beside the session that running tools copy their output to.

    Output is written as it arrives, unsynced: the page cache outlives a killed pod, so after a
    crash the result of an interrupted call can still say what the call printed.
    """

    def __init__(self, session_path: Path) -> None:
        self.dir = session_path.with_name(session_path.stem + ".out")

    def create(self, call_id: str) -> tuple[str, int]:
        """A new spool for one call: its file name and a write-only descriptor."""
        ensure_private_dir(self.dir)
        name = f"{safe_name(call_id)}.log"
        # A FIFO planted here would hang the open; anything but a regular file is refused.
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
        return name, open_regular(self.dir / name, flags, follow=False)

    def read(self, name: str, max_bytes: int) -> tuple[str, int] | None:
        """The first ``max_bytes`` of a spool as text and its full size; None when it is gone."""
        try:
            fd = open_regular(self.dir / safe_name(name), follow=False)
        except OSError:
            return None
        try:
            size = os.fstat(fd).st_size
            data = os.pread(fd, max_bytes, 0)
        except OSError:
            return None
        finally:
            os.close(fd)
        return data.decode("utf-8", "replace"), size

    def mtime_ms(self, name: str) -> int:
        """When the call last wrote output (0 when unknown)."""
        return mtime_ms(self.dir / safe_name(name))

    def remove(self, name: str) -> None:
        """Delete a spool whose call has its result in the session."""
        with contextlib.suppress(OSError):
            (self.dir / safe_name(name)).unlink()

    def clear(self) -> None:
        """Delete every spool (at start-up, once crashed calls have their results)."""
        with contextlib.suppress(OSError):
            for entry in os.scandir(self.dir):
                self.remove(entry.name)


def safe_name(name: str) -> str:
    # Call ids come from the model: never let one name a path outside the spool folder.
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name).lstrip(".") or "_"
