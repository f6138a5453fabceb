"""Files beside the session that background jobs' output goes to: ``<session>.jobs/<id>.log``.

Apart from the tool spools (``<session>.out/``), which every start clears once crashed calls
have their results: a job's spool must outlive that, until the job's end is reported.
"""

from __future__ import annotations

from pathlib import Path

from orchestrator.adapters.session.spools import Spools

__all__ = ["JobSpools"]


class JobSpools(Spools):
    """The folder of one session's job spools."""

    def __init__(self, session_path: Path) -> None:
        super().__init__(session_path, ".jobs")

    def read(self, name: str, offset: int, max_bytes: int) -> bytes:
        """Up to ``max_bytes`` of a spool from ``offset`` (empty when it is gone)."""
        read = self.read_at(name, offset, max_bytes)
        return b"" if read is None else read[0]
