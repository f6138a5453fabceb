"""Where a session's checkpoints live: a private folder beside its session file."""

from __future__ import annotations

from pathlib import Path

from orchestrator.capabilities.checkpoints.errors import CheckpointDirError
from orchestrator.config.paths import claim_private_dir


def checkpoint_dir(session_path: Path) -> Path:
    """``<session folder>/<session stem>.checkpoints``, created 0700 and checked ours.

    The session folder must exist (the session writer makes it). An existing path is used
    only when ``lstat`` shows our own directory with no group or other access: anything else
    (a symbolic link, a file, another user's folder, a shared mode) is refused with
    :class:`CheckpointDirError` and left as it is, since the store would copy the workspace
    into it.
    """
    return claim_private_dir(
        session_path.parent / f"{session_path.stem}.checkpoints",
        what="the checkpoint folder",
        advice="Move it away (the session's checkpoints start anew) or set checkpoints = false",
        error=CheckpointDirError,
    )
