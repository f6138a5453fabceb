"""Where a session's checkpoints live: a private folder beside its session file."""

from __future__ import annotations

import os
from pathlib import Path

from orchestrator.capabilities.checkpoints.errors import CheckpointDirError
from orchestrator.config.paths import private_dir_problem


def checkpoint_dir(session_path: Path) -> Path:
    """``<session folder>/<session stem>.checkpoints``, created 0700 and checked ours.

    The session folder must exist (the session writer makes it). An existing path is used
    only when ``lstat`` shows our own directory with no group or other access: anything else
    (a symbolic link, a file, another user's folder, a shared mode) is refused with
    :class:`CheckpointDirError` and left as it is, since the store would copy the workspace
    into it.
    """
    path = session_path.parent / f"{session_path.stem}.checkpoints"
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass  # checked below, whoever made it
    except OSError as exc:
        raise CheckpointDirError(
            f"cannot create the checkpoint folder {path}: {exc.strerror}"
        ) from None
    else:
        os.chmod(path, 0o700)  # mkdir's mode went through the umask
    try:
        st = os.lstat(path)
    except OSError as exc:
        raise CheckpointDirError(
            f"cannot inspect the checkpoint folder {path}: {exc.strerror}"
        ) from None
    problem = private_dir_problem(st, os.getuid())
    if problem is not None:
        raise CheckpointDirError(
            f"refusing the checkpoint folder {path}: {problem}. Move it away (the session's "
            "checkpoints start anew) or set checkpoints = false"
        )
    return path
