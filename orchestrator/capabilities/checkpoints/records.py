"""What the checkpoint store hands out and what it records: snapshots, sizes, restore plans,
and the metadata a checkpoint's commit message carries beside its tree.

Each commit's message carries what the tree cannot say (:class:`Meta`): whether the snapshot
was of the whole workspace or only of some paths, which files were too large, and in
``only`` mode which paths were first seen present or seen absent. Restoring reads it to tell
"created since the checkpoint" (remove it) from "not known at the checkpoint" (leave it).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

__all__ = [
    "MESSAGE_TITLE",
    "Commit",
    "Decision",
    "Entry",
    "FileStat",
    "LeftAlone",
    "LeftReason",
    "Meta",
    "RestorePlan",
    "Snapshot",
    "Staged",
    "WorkspaceSize",
]

MESSAGE_TITLE = "pod checkpoint"

Entry = tuple[str, str]
"""A tree entry: (mode, object id)."""

LeftReason = Literal["too_large", "ignored", "not_checkpointed", "blocked"]


@dataclass(frozen=True)
class Snapshot:
    """One checkpoint taken: its id, the files it holds, what it left out, what it cost."""

    id: str
    files: int
    skipped: list[str]
    """Files over ``max_file_bytes``, not in the checkpoint (relative paths)."""
    elapsed_ms: float
    new: bool
    """False when the content was the previous checkpoint's and its id was reused."""

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


@dataclass(frozen=True)
class WorkspaceSize:
    """What a full snapshot of the workspace would hold."""

    files: int
    bytes: int
    too_large: list[str]
    """Files over ``max_file_bytes``, which no snapshot takes."""
    max_total_bytes: int

    @property
    def over_budget(self) -> bool:
        """True when a full snapshot would hold more than ``max_total_bytes``: checkpoint
        only the files the pod's tools touch (``snapshot(only=...)``)."""
        return self.bytes > self.max_total_bytes

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict, ``over_budget`` included."""
        return {**asdict(self), "over_budget": self.over_budget}


@dataclass(frozen=True)
class LeftAlone:
    """A path a restore does not touch, and why."""

    path: str
    """Relative; a folder ends with ``/``."""
    reason: LeftReason
    detail: str


@dataclass(frozen=True)
class FileStat:
    """Lines added and removed in one file by the restore (None for a binary file)."""

    path: str
    insertions: int | None
    deletions: int | None
    binary: bool


@dataclass(frozen=True)
class RestorePlan:
    """What restoring ``target`` does (or did) to the workspace."""

    target: str
    restore: list[str]
    """Files written back: changed or deleted since the checkpoint."""
    delete: list[str]
    """Files removed: created since the checkpoint."""
    left: list[LeftAlone]
    """Paths left as they are: not restorable."""
    diffstat: list[FileStat]
    """Per file restored or deleted, as seen from the current workspace."""
    before: str | None = None
    """The checkpoint of the workspace as it was before the restore (None for a plan)."""
    insertions: int = field(init=False)
    deletions: int = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "insertions", sum(s.insertions or 0 for s in self.diffstat))
        object.__setattr__(self, "deletions", sum(s.deletions or 0 for s in self.diffstat))

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (the protocol's ``rewind_preview``)."""
        return asdict(self)


@dataclass(frozen=True)
class Meta:
    """What a checkpoint's commit message records beside its tree."""

    mode: Literal["full", "only"]
    files: int
    skipped: tuple[str, ...] = ()
    seen: tuple[str, ...] = ()
    """``only`` mode: paths added to the store by this snapshot (their first sighting)."""
    absent: tuple[str, ...] = ()
    """``only`` mode: paths asked for that did not exist."""

    def message(self) -> str:
        """The commit message: a fixed title, then this metadata as JSON."""
        body = {"v": 1, "mode": self.mode, "files": self.files, "skipped": list(self.skipped)}
        if self.mode == "only":
            body |= {"seen": list(self.seen), "absent": list(self.absent)}
        return f"{MESSAGE_TITLE}\n\n{json.dumps(body, sort_keys=True)}\n"

    @classmethod
    def parse(cls, message: str) -> Meta | None:
        """The metadata in a commit message; None when it is not a checkpoint's."""
        title, _, body = message.partition("\n\n")
        if title.strip() != MESSAGE_TITLE:
            return None
        try:
            data = json.loads(body)
            return cls(
                mode="only" if data["mode"] == "only" else "full",
                files=int(data["files"]),
                skipped=tuple(data.get("skipped", ())),
                seen=tuple(data.get("seen", ())),
                absent=tuple(data.get("absent", ())),
            )
        except (ValueError, KeyError, TypeError):
            return None


@dataclass(frozen=True)
class Commit:
    """One checkpoint as read from the store: its commit, its tree, its metadata."""

    id: str
    tree: str
    meta: Meta


@dataclass
class Staged:
    """The index after a snapshot's update, before any commit."""

    tree: str
    meta: Meta
    written: int
    """Objects the update may have written: blobs, and the trees above changed paths."""


@dataclass
class Decision:
    """What a restore does, path by path: files to write back, to delete, to leave alone."""

    writes: dict[str, Entry]
    deletes: list[str]
    left: dict[str, LeftAlone]
