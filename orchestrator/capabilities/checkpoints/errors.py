"""The errors of the checkpoint store, each with a message a person can act on."""

from __future__ import annotations

from orchestrator.errors import PodRuntimeError


class CheckpointError(PodRuntimeError):
    """A checkpoint could not be taken, read or restored; the pod itself keeps going."""


class GitUnavailableError(CheckpointError):
    """``git`` is missing or too old to keep checkpoints."""


class CheckpointDirError(CheckpointError):
    """The folder that holds a session's checkpoints is not a private folder of ours."""


class CheckpointBusyError(CheckpointError):
    """Another process is using the same checkpoint store."""


class UnknownCheckpointError(CheckpointError):
    """A checkpoint id the store does not have (or cannot read); ``checkpoint_id`` names it."""

    def __init__(self, checkpoint_id: str, why: str) -> None:
        super().__init__(f"checkpoint {checkpoint_id!r} {why}")
        self.checkpoint_id = checkpoint_id


class GitCommandError(CheckpointError):
    """A git command of the store failed; the message has the command and git's own words."""


class RestoreError(CheckpointError):
    """A file could not be put back; ``path`` names it. Calling ``restore`` again resumes."""

    def __init__(self, path: str, why: str) -> None:
        super().__init__(
            f"could not restore {path!r}: {why}. The files restored so far stay restored; "
            "fix the cause and restore again to finish"
        )
        self.path = path
