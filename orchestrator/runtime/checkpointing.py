"""When the pod snapshots the workspace, and how a rewind restores it: the shell around the
checkpoint store (``orchestrator.capabilities.checkpoints``), which does the git work on a worker thread.

A snapshot is taken as each turn with a prompt begins and before each round that runs a tool
that can change files; its id goes to the session file (a ``checkpoint`` record), so a rewind
finds it after a restart. A workspace over the snapshot budget is said once (an alert), and
from then on only the files the pod's own tools touched are snapshotted. A store that fails
(git missing, a full disk) is an alert, and the pod goes on without checkpoints: they are a
safety net, never a reason for a turn to fail.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path

from orchestrator.adapters.session import (
    CheckpointRecord,
    LoadedSession,
    SessionWriter,
    rewind_loaded,
)
from orchestrator.capabilities.checkpoints import (
    CheckpointBusyError,
    CheckpointError,
    CheckpointStore,
    RestorePlan,
    checkpoint_dir,
)
from orchestrator.config.model import PodConfig
from orchestrator.protocol import RewindFilesData
from orchestrator.runtime.offload import off_loop

log = logging.getLogger(__name__)

Alert = Callable[[str, str, str], None]
Record = Callable[[CheckpointRecord], None]


class Checkpointer:
    """Takes and restores one session's workspace snapshots."""

    def __init__(
        self,
        *,
        config: PodConfig,
        session_path: Path,
        records: list[CheckpointRecord],
        record: Record,
        alert: Alert,
    ) -> None:
        self.config = config
        self.records = records
        """Every checkpoint of the session, oldest first (loaded, then taken)."""
        self._record = record
        self._alert = alert
        self._store: CheckpointStore | None = None
        self._session_path = session_path
        self._broken = False
        self.touched: set[str] = set()
        """Files the pod's tools wrote, for a workspace over the budget (relative paths)."""
        self._touched_only: bool | None = None

    @property
    def touched_only(self) -> bool:
        """Whether snapshots hold only what the pod's tools touched (over budget)."""
        return bool(self._touched_only)

    def _open(self) -> CheckpointStore | None:
        if self._broken:
            return None
        if self._store is None:
            try:
                self._store = CheckpointStore(
                    self.config.workspace,
                    checkpoint_dir(self._session_path),
                    max_file_bytes=self.config.checkpoint_max_file_bytes,
                    max_total_bytes=self.config.checkpoint_max_total_bytes,
                )
            except (CheckpointError, OSError) as exc:
                self._give_up(exc)
                return None
        return self._store

    def _give_up(self, exc: BaseException) -> None:
        self._broken = True
        self._alert(
            "error",
            "checkpoints",
            f"workspace checkpoints are off for this pod: {exc}. Rewinding the conversation "
            "still works; restoring files needs checkpoints",
        )

    async def snapshot(
        self, *, seq: int, turn: int, reason: str, keep: bool = True
    ) -> CheckpointRecord | None:
        """Snapshot the workspace before item ``seq``; the record is on disk when it returns
        (None: checkpoints are off or failed, which was said). ``keep`` False: the record is
        only returned, for :meth:`adopt` once its ``seq`` is known (a custom command's
        snapshot, taken before its ``!`` lines run and its prompt is committed)."""
        store = self._open()
        if store is None:
            return None
        try:
            if self._touched_only is None:
                self._touched_only = (await off_loop(store.measure)).over_budget
                if self._touched_only:
                    self._alert(
                        "warn",
                        "checkpoints",
                        f"the workspace is larger than checkpoint_max_total_bytes "
                        f"({self.config.checkpoint_max_total_bytes:,} bytes): checkpoints keep "
                        "only the files the pod's own tools change",
                    )
            only = self._only()
            snap = await off_loop(lambda: store.snapshot(only=only))
        except (CheckpointError, OSError) as exc:
            self._give_up(exc)
            return None
        record = CheckpointRecord(
            id=snap.id,
            seq=seq,
            turn=turn,
            reason="round" if reason == "round" else "turn",
            skipped=list(snap.skipped)[:100],
            touched_only=bool(self._touched_only),
        )
        if keep:
            self.adopt(record)
        return record

    def adopt(self, record: CheckpointRecord) -> None:
        """Keep a snapshot taken earlier as the session's checkpoint ``record``."""
        self._record(record)
        self.records.append(record)

    async def preview(self, checkpoint: str) -> RewindFilesData:
        """What restoring ``checkpoint`` would change now."""
        store, only = self._require(), self._only()
        return files_data(await off_loop(lambda: store.plan(checkpoint, only=only)))

    async def restore(self, checkpoint: str) -> tuple[RewindFilesData, str | None]:
        """Make the workspace what it was at ``checkpoint`` (idempotent: a replay after a
        crash mid-restore gives the same result); what changed, and the snapshot of the
        workspace as it was just before."""
        store, only = self._require(), self._only()
        plan = await off_loop(lambda: store.restore(checkpoint, only=only))
        return files_data(plan), plan.before

    def close(self) -> None:
        """Let go of the store (its lock file)."""
        if self._store is not None:
            self._store.close()

    def _only(self) -> list[str] | None:
        # Over budget, the snapshot a restore takes first covers what the tools touched, not
        # a walk of the whole workspace.
        return sorted(self.touched) if self._touched_only else None

    def _require(self) -> CheckpointStore:
        store = self._open()
        if store is None:
            raise CheckpointError("workspace checkpoints are not available in this pod")
        return store


def finish_rewind(
    loaded: LoadedSession, session: SessionWriter, config: PodConfig, session_path: Path
) -> tuple[str, str]:
    """Finish a rewind the pod was stopped in the middle of (its ``intent`` is on disk, its
    ``done`` is not): restore the files again (restoring is idempotent), record it done, and
    drop the rewound part of the loaded conversation. Returns an alert ``(level, message)``;
    a restore that fails again leaves the intent for the next start."""
    pending = loaded.pending_rewind
    assert pending is not None
    before: str | None = None
    if pending.checkpoint is not None:
        try:
            store = CheckpointStore(
                config.workspace,
                checkpoint_dir(session_path),
                max_file_bytes=config.checkpoint_max_file_bytes,
                max_total_bytes=config.checkpoint_max_total_bytes,
            )
            try:
                before = _restore_when_free(store, pending.checkpoint)
            finally:
                store.close()
        except Exception as exc:  # whatever it is, the pod must start and say so
            log.warning("finishing a cut-short rewind failed", exc_info=True)
            return (
                "error",
                f"a rewind to before prompt {pending.to_seq} was cut short and cannot be "
                f"finished yet: {exc}; the workspace may hold a mix of old and new files until "
                "it is (the next start tries again)",
            )
    session.record(pending.model_copy(update={"phase": "done", "before": before}))
    if pending.restore != "code":
        rewind_loaded(loaded, pending.to_seq)
    loaded.pending_rewind = None
    return (
        "warn",
        f"a rewind to before prompt {pending.to_seq} was cut short when the pod stopped; it "
        "was finished now",
    )


def _restore_when_free(store: CheckpointStore, checkpoint: str) -> str | None:
    """Restore, waiting up to a few seconds for a store another process still holds (the
    killed pod's last git command may not have exited yet)."""
    for attempt in range(20):
        try:
            return store.restore(checkpoint).before
        except CheckpointBusyError:
            if attempt == 19:
                raise
            time.sleep(0.25)
    return None


def files_data(plan: RestorePlan) -> RewindFilesData:
    """A restore plan as the protocol shows it."""
    return RewindFilesData(
        restored=list(plan.restore),
        deleted=list(plan.delete),
        left={left.path: left.detail or left.reason for left in plan.left},
        insertions=plan.insertions,
        deletions=plan.deletions,
    )
