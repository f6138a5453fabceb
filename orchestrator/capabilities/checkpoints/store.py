"""The checkpoint store: the workspace's content as commits of a shadow git repository.

:class:`CheckpointStore` is the front: it opens the store, serializes operations (a thread
lock and a ``flock``), and runs each public operation out of its two halves, the chain of
snapshots (:mod:`.snapshot`) and the restore (:mod:`.restore`).

A restore records the intent in ``RESTORING`` inside the store before the first change and
removes it after the last, so a restore killed part-way and run again finishes the job and
still reports the snapshot taken before the first attempt.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import stat
import threading
import time
from collections.abc import Iterable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

from orchestrator.capabilities.checkpoints.errors import (
    CheckpointBusyError,
    CheckpointDirError,
    CheckpointError,
)
from orchestrator.capabilities.checkpoints.files import Workspace
from orchestrator.capabilities.checkpoints.git import EXCLUDE, Git, git_program
from orchestrator.capabilities.checkpoints.plumbing import guarded, relative_to, split_nul
from orchestrator.capabilities.checkpoints.records import (
    FileStat,
    LeftAlone,
    RestorePlan,
    Snapshot,
    Staged,
    WorkspaceSize,
)
from orchestrator.capabilities.checkpoints.restore import Restorer
from orchestrator.capabilities.checkpoints.snapshot import REF, Chain

__all__ = [
    "INTENT",
    "CheckpointStore",
    "FileStat",
    "LeftAlone",
    "RestorePlan",
    "Snapshot",
    "WorkspaceSize",
]

INTENT = "RESTORING"


class CheckpointStore:
    """Checkpoints of one workspace in a shadow git repository at ``git_dir``.

    Every method blocks (run it on a worker thread) and is safe to call from several threads;
    a second process opening the same store gets :class:`CheckpointBusyError` while an
    operation runs.
    """

    def __init__(
        self, workspace: Path, git_dir: Path, *, max_file_bytes: int, max_total_bytes: int
    ) -> None:
        if max_file_bytes <= 0 or max_total_bytes <= 0:
            raise CheckpointError(
                f"checkpoint caps must be positive (max_file_bytes={max_file_bytes}, "
                f"max_total_bytes={max_total_bytes})"
            )
        self.workspace = workspace.resolve()
        if not self.workspace.is_dir():
            raise CheckpointError(f"the workspace {workspace} is not a folder")
        self.git_dir = git_dir.absolute()
        self.max_file_bytes = max_file_bytes
        self.max_total_bytes = max_total_bytes
        program = git_program()
        try:
            self.git_dir.mkdir(mode=0o700, exist_ok=True)
        except OSError as exc:
            raise CheckpointDirError(
                f"cannot create the checkpoint store {git_dir}: {exc.strerror}"
            ) from None
        if self.git_dir.is_symlink() or not self.git_dir.is_dir():
            raise CheckpointDirError(f"the checkpoint store {git_dir} is not a folder")
        self._git = Git(program, self.git_dir, self.workspace)
        self._git.write_setup()
        inside = relative_to(self.git_dir.resolve(), self.workspace)
        if inside:
            # A store inside the workspace must not snapshot itself.
            exclude = self.git_dir / "info" / "exclude"
            exclude.write_text(f"{EXCLUDE}/{inside}/\n", encoding="utf-8")
        self._thread_lock = threading.Lock()
        self._lock_fd = os.open(
            self.git_dir / "store.lock",
            os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW,
            0o600,
        )
        self._chain = Chain(self._git, self.git_dir, self.workspace, max_file_bytes=max_file_bytes)
        self._restorer = Restorer(self._chain)

    def close(self) -> None:
        """Release the store's lock file."""
        if self._lock_fd >= 0:
            os.close(self._lock_fd)
            self._lock_fd = -1

    def __enter__(self) -> CheckpointStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- public operations ---------------------------------------------------------------------

    def snapshot(self, only: Iterable[str] | None = None) -> Snapshot:
        """Record the workspace as a checkpoint and return it.

        ``only`` (paths relative to the workspace, or absolute inside it): update just those
        paths (files, or folders and everything under them) and keep every other entry of
        the previous checkpoint as it was. Paths outside the workspace are ignored.
        """
        start = time.perf_counter()
        with self._guard():
            commit, staged = self._chain.snapshot(self._only(only), refresh=False)
        return Snapshot(
            id=commit.id,
            files=commit.meta.files,
            skipped=list(commit.meta.skipped),
            elapsed_ms=(time.perf_counter() - start) * 1000.0,
            new=staged is not None,
        )

    def measure(self) -> WorkspaceSize:
        """Files and bytes a full snapshot would hold (``.gitignore`` and the file cap
        respected); ``over_budget`` tells whether to switch to ``snapshot(only=...)``."""
        with self._guard():
            listing = self._git.run("ls-files", "-z", "--cached", "--others", "--exclude-standard")
        files = total = 0
        too_large: list[str] = []
        for raw in split_nul(listing):
            path = os.fsdecode(raw)
            if path.endswith("/"):
                continue  # a nested repository: never snapshotted
            try:
                st = os.lstat(self.workspace / path)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode) and st.st_size > self.max_file_bytes:
                too_large.append(path)
            elif stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode):
                files += 1
                total += st.st_size
        return WorkspaceSize(
            files=files,
            bytes=total,
            too_large=sorted(too_large),
            max_total_bytes=self.max_total_bytes,
        )

    def plan(self, target: str, *, only: Iterable[str] | None = None) -> RestorePlan:
        """What :meth:`restore` would do now, without changing the workspace or the chain.

        ``only`` as for :meth:`restore`.
        """
        with self._guard():
            commit = self._chain.read(target)
            scratch = self.git_dir / f"plan-index.{os.getpid()}.{threading.get_ident()}"
            try:
                if self._git.index.exists():
                    shutil.copyfile(self._git.index, scratch)
                head = self._chain.head_id()
                staged = self._chain.stage(
                    self._only(only), refresh=only is not None, index=scratch
                )
                decision = self._restorer.decide(commit, staged.tree, staged.meta, head=head)
                left = self._restorer.left(decision, index=scratch)
                return self._restorer.report(commit, staged.tree, decision, left, before=None)
            finally:
                scratch.unlink(missing_ok=True)

    def restore(self, target: str, *, only: Iterable[str] | None = None) -> RestorePlan:
        """Make the workspace match checkpoint ``target`` for every path the store tracks.

        First the current state is checkpointed (its id is the plan's ``before``). Files
        changed or deleted since come back byte for byte (executable bit and links too),
        files created since are removed with the folders that leaves empty; what the store
        never held is left alone and listed. Idempotent: after a restore killed part-way,
        calling it again with the same target finishes it and reports the same ``before``.

        ``only``: for a workspace over budget, check only these paths and the files already
        in the store for changes (no walk of the whole workspace); None checks everything.
        """
        with self._guard():
            commit = self._chain.read(target)
            intent = self._read_intent()
            try:
                workspace = Workspace(str(self.workspace))
            except OSError as exc:
                raise CheckpointError(
                    f"cannot open the workspace {self.workspace}: {exc.strerror}"
                ) from None
            try:
                if intent is not None:
                    # What a killed restore may have left: temporary files, and folders its
                    # deletions emptied but had not removed yet.
                    for path in intent.get("writes", []):
                        workspace.remove_temp(path)
                    for path in intent.get("deletes", []):
                        if not os.path.lexists(self.workspace / path):
                            guarded(path, partial(workspace.remove, path))
                paths = self._only(only)
                if intent is not None and intent.get("target") == commit.id:
                    # A replay: the first attempt's snapshot is the state before the rewind.
                    before = str(intent["before"])
                    head = intent.get("head")
                    current = self._chain.stage(paths, refresh=only is not None)
                else:
                    head = self._chain.head_id()
                    before_commit, _ = self._chain.snapshot(paths, refresh=only is not None)
                    before = before_commit.id
                    current = Staged(before_commit.tree, before_commit.meta, written=0)
                decision = self._restorer.decide(commit, current.tree, current.meta, head=head)
                self._restorer.check_objects(commit, decision)
                left = self._restorer.left(decision)
                self._write_intent(
                    {
                        "target": commit.id,
                        "before": before,
                        "head": head,
                        "writes": sorted(decision.writes),
                        "deletes": decision.deletes,
                    }
                )
                self._restorer.apply(workspace, decision)
                workspace.sync()
            finally:
                workspace.close()
            plan = self._restorer.report(commit, current.tree, decision, left, before=before)
            (self.git_dir / INTENT).unlink(missing_ok=True)
            return plan

    def interrupted_restore(self) -> str | None:
        """The target of a restore that was killed before it finished, if any."""
        intent = self._read_intent()
        return str(intent["target"]) if intent and "target" in intent else None

    # -- guarding and arguments --------------------------------------------------------------------------------

    def _only(self, only: Iterable[str] | None) -> list[str] | None:
        """``only`` as sorted workspace-relative paths; those outside the workspace dropped."""
        if only is None:
            return None
        out: set[str] = set()
        for raw in only:
            path = Path(raw)
            if path.is_absolute():
                rel = relative_to(Path(os.path.normpath(path)), self.workspace)
                if rel is None:
                    continue
                path = Path(rel)
            normal = os.path.normpath(path).replace(os.sep, "/")
            if normal in ("", ".") or normal == ".." or normal.startswith("../"):
                continue
            folder, _, name = normal.rpartition("/")
            if folder:
                # A tool may write through a link to a folder: the file is where it leads.
                real = Path(os.path.realpath(self.workspace / folder))
                inside = "" if real == self.workspace else relative_to(real, self.workspace)
                if inside is None:
                    continue
                normal = f"{inside}/{name}" if inside else name
            out.add(normal)
        return sorted(out)

    def _read_intent(self) -> dict[str, Any] | None:
        try:
            data = json.loads((self.git_dir / INTENT).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _write_intent(self, data: dict[str, Any]) -> None:
        path = self.git_dir / INTENT
        tmp = path.with_name(f"{INTENT}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, json.dumps(data).encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)

    @contextlib.contextmanager
    def _guard(self) -> Iterator[None]:
        """One operation at a time: a thread lock, and a ``flock`` against other processes."""
        if self._lock_fd < 0:
            raise CheckpointError(f"the checkpoint store {self.git_dir} is closed")
        with self._thread_lock:
            try:
                fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise CheckpointBusyError(
                    f"another process is using the checkpoint store {self.git_dir}; one pod "
                    "at a time keeps a session's checkpoints"
                ) from None
            try:
                # Holding the lock, any git lock file is a leftover of a killed command.
                for name in ("index.lock", "HEAD.lock", f"{REF}.lock"):
                    with contextlib.suppress(FileNotFoundError):
                        (self.git_dir / name).unlink()
                yield
            finally:
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
