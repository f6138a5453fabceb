"""Checkpoints of the workspace for rewind (issue 22): a shadow git repository per session.

:class:`CheckpointStore` records the workspace as commits of a git repository kept beside
the session file (:func:`checkpoint_dir`), never in the workspace's own ``.git``, and puts
the files back: :meth:`~CheckpointStore.snapshot`, :meth:`~CheckpointStore.plan`,
:meth:`~CheckpointStore.restore`. The store's halves are modules of their own: the chain of
snapshots (:mod:`.snapshot`), the restore (:mod:`.restore`), what both hand out and record
(:mod:`.records`) and the helpers over git's output (:mod:`.plumbing`). See docs/rewind.md,
"Checkpoints".
"""

from __future__ import annotations

from orchestrator.capabilities.checkpoints.errors import (
    CheckpointBusyError,
    CheckpointDirError,
    CheckpointError,
    GitCommandError,
    GitUnavailableError,
    RestoreError,
    UnknownCheckpointError,
)
from orchestrator.capabilities.checkpoints.location import checkpoint_dir
from orchestrator.capabilities.checkpoints.records import (
    FileStat,
    LeftAlone,
    RestorePlan,
    Snapshot,
    WorkspaceSize,
)
from orchestrator.capabilities.checkpoints.store import CheckpointStore

__all__ = [
    "CheckpointBusyError",
    "CheckpointDirError",
    "CheckpointError",
    "CheckpointStore",
    "FileStat",
    "GitCommandError",
    "GitUnavailableError",
    "LeftAlone",
    "RestoreError",
    "RestorePlan",
    "Snapshot",
    "UnknownCheckpointError",
    "WorkspaceSize",
    "checkpoint_dir",
]
