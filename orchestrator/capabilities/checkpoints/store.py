"""The checkpoint store: the workspace's content as commits of a shadow git repository.

A snapshot asks ``git status`` (with the untracked cache, so a snapshot of a large workspace
costs a walk of what changed, not a read of everything) which files differ from the store's
index, checks each of those with ``lstat`` (too large, gone, not a regular file or a link),
updates the index with them, writes the tree and commits it on top of the previous
checkpoint. Checkpoints form one chain (``refs/heads/checkpoints``), so every one stays
reachable; git never collects garbage here, and the store packs loose objects itself once
enough have piled up, at the end of a snapshot.

When nothing changed, the snapshot returns the previous checkpoint's id: two prompts with the
same workspace share a checkpoint.

Each commit's message carries what the tree cannot say (:class:`_Meta`): whether the snapshot
was of the whole workspace or only of some paths, which files were too large, and in
``only`` mode which paths were first seen present or seen absent. Restoring reads it to tell
"created since the checkpoint" (remove it) from "not known at the checkpoint" (leave it).

Restoring never follows a link and writes each file atomically (:mod:`.files`). It records
the intent in ``RESTORING`` inside the store before the first change and removes it after
the last, so a restore killed part-way and run again finishes the job and still reports the
snapshot taken before the first attempt.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import shutil
import stat
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Literal

from orchestrator.capabilities.checkpoints.errors import (
    CheckpointBusyError,
    CheckpointDirError,
    CheckpointError,
    GitCommandError,
    RestoreError,
    UnknownCheckpointError,
)
from orchestrator.capabilities.checkpoints.files import MODE_EXEC, MODE_FILE, MODE_LINK, Workspace
from orchestrator.capabilities.checkpoints.git import EXCLUDE, Git, git_program

REF = "refs/heads/checkpoints"
MESSAGE_TITLE = "pod checkpoint"
INTENT = "RESTORING"
PACK_AFTER_OBJECTS = 1_000
"""Loose objects written since the last pack after which a snapshot packs them (one pack
file instead of thousands of 4 KiB files on disk)."""
CONSOLIDATE_AFTER_PACKS = 20
_ID = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")
_TRACKED_MODES = (MODE_FILE, MODE_EXEC, MODE_LINK)

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
class _Meta:
    """What a checkpoint's commit message records beside its tree."""

    mode: Literal["full", "only"]
    files: int
    skipped: tuple[str, ...] = ()
    seen: tuple[str, ...] = ()
    """``only`` mode: paths added to the store by this snapshot (their first sighting)."""
    absent: tuple[str, ...] = ()
    """``only`` mode: paths asked for that did not exist."""

    def message(self) -> str:
        body = {"v": 1, "mode": self.mode, "files": self.files, "skipped": list(self.skipped)}
        if self.mode == "only":
            body |= {"seen": list(self.seen), "absent": list(self.absent)}
        return f"{MESSAGE_TITLE}\n\n{json.dumps(body, sort_keys=True)}\n"

    @classmethod
    def parse(cls, message: str) -> _Meta | None:
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
class _Commit:
    id: str
    tree: str
    meta: _Meta


@dataclass
class _Staged:
    """The index after a snapshot's update, before any commit."""

    tree: str
    meta: _Meta
    written: int
    """Objects the update may have written: blobs, and the trees above changed paths."""


@dataclass
class _Decision:
    writes: dict[str, Entry]
    deletes: list[str]
    left: dict[str, LeftAlone]


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
        inside = _relative_to(self.git_dir.resolve(), self.workspace)
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
        self._head: _Commit | None = None
        self._head_known = False
        self._index_files: int | None = None
        self._index_tree: str | None = None
        """The tree of the store's index as this process last wrote it (None: unknown)."""
        self._loose: int | None = None

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
            commit, staged = self._snapshot(self._only(only), refresh=False)
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
        for raw in _split(listing):
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
            commit = self._commit(target)
            scratch = self.git_dir / f"plan-index.{os.getpid()}.{threading.get_ident()}"
            try:
                if self._git.index.exists():
                    shutil.copyfile(self._git.index, scratch)
                head = self._head_id()
                staged = self._stage(self._only(only), refresh=only is not None, index=scratch)
                decision = self._decide(commit, staged.tree, staged.meta, head=head)
                left = self._left(decision, index=scratch)
                return self._report(commit, staged.tree, decision, left, before=None)
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
            commit = self._commit(target)
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
                            _guarded(path, partial(workspace.remove, path))
                paths = self._only(only)
                if intent is not None and intent.get("target") == commit.id:
                    # A replay: the first attempt's snapshot is the state before the rewind.
                    before = str(intent["before"])
                    head = intent.get("head")
                    current = self._stage(paths, refresh=only is not None)
                else:
                    head = self._head_id()
                    before_commit, _ = self._snapshot(paths, refresh=only is not None)
                    before = before_commit.id
                    current = _Staged(before_commit.tree, before_commit.meta, written=0)
                decision = self._decide(commit, current.tree, current.meta, head=head)
                self._check_objects(commit, decision)
                left = self._left(decision)
                self._write_intent(
                    {
                        "target": commit.id,
                        "before": before,
                        "head": head,
                        "writes": sorted(decision.writes),
                        "deletes": decision.deletes,
                    }
                )
                self._apply(workspace, decision)
                workspace.sync()
            finally:
                workspace.close()
            plan = self._report(commit, current.tree, decision, left, before=before)
            (self.git_dir / INTENT).unlink(missing_ok=True)
            return plan

    def interrupted_restore(self) -> str | None:
        """The target of a restore that was killed before it finished, if any."""
        intent = self._read_intent()
        return str(intent["target"]) if intent and "target" in intent else None

    # -- snapshots ------------------------------------------------------------------------------

    def _snapshot(self, only: list[str] | None, *, refresh: bool) -> tuple[_Commit, _Staged | None]:
        """Stage and commit; the staged state is None when the previous checkpoint was reused."""
        staged = self._stage(only, refresh=refresh)
        head = self._head_commit()
        if head is not None and head.tree == staged.tree and head.meta == staged.meta:
            return head, None
        parents = ["-p", head.id] if head is not None else []
        commit_id = (
            self._git.run(
                "commit-tree", staged.tree, *parents, stdin=staged.meta.message().encode()
            )
            .decode()
            .strip()
        )
        self._set_ref(commit_id)
        self._head = _Commit(commit_id, staged.tree, staged.meta)
        self._maybe_pack(staged.written + 1)
        return self._head, staged

    def _stage(
        self, only: list[str] | None, *, refresh: bool, index: Path | None = None
    ) -> _Staged:
        """Bring the index (``index``: a scratch copy) up to date with the workspace."""
        if only is not None and refresh:
            # Files already in the store changed by anyone count too, not only ``only``.
            changed = self._git.run("diff-files", "--name-only", "-z", index=index)
            only = sorted({*only, *(os.fsdecode(p) for p in _split(changed))})
        if only is not None and not only:
            status = b""
        else:
            args = ["status", "--porcelain=v2", "-z", "--untracked-files=all"]
            args += ["--ignore-submodules=all", "--no-renames"]
            status = self._git.run(*args, *(["--", *only] if only else []), index=index)
        add: list[str] = []
        remove: list[str] = []
        skipped: list[str] = []
        new: list[str] = []
        real_dirs: set[str] = set()
        for tracked, path in _changes(status):
            if path.endswith("/"):
                continue  # a nested repository
            st = self._lstat_inside(path, real_dirs)
            if st is not None and stat.S_ISREG(st.st_mode) and st.st_size > self.max_file_bytes:
                skipped.append(path)
            elif st is not None and (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
                add.append(path)
                if not tracked:
                    new.append(path)
                continue
            # Gone, too large, beyond a link, or a FIFO, socket, device or folder where a
            # file was: out of the index, and never opened.
            if tracked:
                remove.append(path)
        if index is None and self._index_files is None:
            self._index_files = self._count_index(None)
        if remove:
            self._git.run(
                "update-index", "--force-remove", "-z", "--stdin", stdin=_nul(remove), index=index
            )
        if add:
            # --replace: a folder that became a file (or a link) leaves the index for it.
            self._git.run(
                "update-index", "--add", "--replace", "-z", "--stdin", stdin=_nul(add), index=index
            )
        if index is None and not (add or remove) and self._index_tree is not None:
            tree = self._index_tree  # nothing changed since this process last wrote it
        else:
            tree = self._git.run("write-tree", index=index).decode().strip()
            if index is None:
                self._index_tree = tree
        if index is not None:
            files = self._count_index(index)
        else:
            files = (self._index_files or 0) + len(new) - len(remove)
            self._index_files = files
        if only is None:
            meta = _Meta(mode="full", files=files, skipped=tuple(sorted(skipped)))
        else:
            absent = [p for p in only if not os.path.lexists(self.workspace / p)]
            meta = _Meta(
                mode="only",
                files=files,
                skipped=tuple(sorted(skipped)),
                seen=tuple(sorted(new)),
                absent=tuple(sorted(absent)),
            )
        folders = {
            "/".join(p.split("/")[:d]) for p in add + remove for d in range(p.count("/") + 1)
        }
        return _Staged(
            tree=tree, meta=meta, written=len(add) + len(folders) if add or remove else 0
        )

    def _lstat_inside(self, path: str, real_dirs: set[str]) -> os.stat_result | None:
        """``lstat`` of ``path`` when every folder above it is a real folder (not a link),
        else None: what lies beyond a link is outside what the store may read."""
        parts = path.split("/")
        for depth in range(1, len(parts)):
            parent = "/".join(parts[:depth])
            if parent in real_dirs:
                continue
            try:
                if not stat.S_ISDIR(os.lstat(self.workspace / parent).st_mode):
                    return None
            except OSError:
                return None
            real_dirs.add(parent)
        try:
            return os.lstat(self.workspace / path)
        except OSError:
            return None

    def _set_ref(self, commit_id: str) -> None:
        """Point the chain at ``commit_id``: the ref file replaced whole, as git would.

        No ``git update-ref`` process: the store's lock already makes this the only writer,
        and refs are never packed here (no gc), so the loose ref file is the whole truth.
        """
        path = self.git_dir / REF
        tmp = path.with_name(f"{path.name}.new")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, f"{commit_id}\n".encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)

    def _count_index(self, index: Path | None) -> int:
        return len(_split(self._git.run("ls-files", "-z", index=index)))

    def _maybe_pack(self, written: int) -> None:
        """Pack loose objects once enough piled up (never git's own auto-gc)."""
        if self._loose is None:
            counts = self._git.run("count-objects", "-v").decode()
            found = re.search(r"^count: (\d+)", counts, flags=re.M)
            self._loose = int(found[1]) if found else 0
        else:
            self._loose += written
        if self._loose < PACK_AFTER_OBJECTS:
            return
        packs = len(list((self.git_dir / "objects" / "pack").glob("*.pack")))
        everything = ["-a"] if packs >= CONSOLIDATE_AFTER_PACKS else []
        self._git.run("repack", "-d", "-q", "--no-write-bitmap-index", *everything)
        self._loose = 0

    # -- reading checkpoints -------------------------------------------------------------------

    def _head_commit(self) -> _Commit | None:
        if not self._head_known:
            out = self._git.run("rev-parse", "--verify", "-q", f"{REF}^{{commit}}", ok=(0, 1))
            sha = out.decode().strip()
            self._head = self._commit(sha) if sha else None
            self._head_known = True
        return self._head

    def _head_id(self) -> str | None:
        head = self._head_commit()
        return head.id if head else None

    def _commit(self, target: str) -> _Commit:
        """The checkpoint ``target``; :class:`UnknownCheckpointError` if not one of ours."""
        if not isinstance(target, str) or not _ID.fullmatch(target):
            raise UnknownCheckpointError(
                str(target), "is not a checkpoint id (a commit id of 40 hex digits)"
            )
        try:
            raw = self._git.run("cat-file", "commit", target)
        except GitCommandError:
            raise UnknownCheckpointError(target, f"is not in the store {self.git_dir}") from None
        text = raw.decode(errors="replace")
        header, _, message = text.partition("\n\n")
        tree = next((ln[5:] for ln in header.splitlines() if ln.startswith("tree ")), "")
        meta = _Meta.parse(message)
        if meta is None or not tree:
            raise UnknownCheckpointError(target, "is a commit, but not a checkpoint of this store")
        return _Commit(target, tree, meta)

    def _entries(self, tree: str, *, of: str, paths: list[str] | None = None) -> dict[str, Entry]:
        args = ["ls-tree", "-r", "-z", "--full-tree", tree]
        try:
            out = self._git.run(*args, *(["--", *paths] if paths else []))
        except GitCommandError as exc:
            raise UnknownCheckpointError(of, f"is damaged: {exc}") from None
        entries: dict[str, Entry] = {}
        for record in _split(out):
            info, _, path = record.partition(b"\t")
            mode, _kind, sha = info.decode().split(" ")
            if mode in _TRACKED_MODES:
                entries[os.fsdecode(path)] = (mode, sha)
        return entries

    # -- deciding a restore ----------------------------------------------------------------------

    def _decide(
        self, target: _Commit, current_tree: str, current: _Meta, *, head: str | None
    ) -> _Decision:
        """Which files to write, which to delete, which to leave, to go from now to target."""
        have = self._entries(current_tree, of="the current state")
        want: dict[str, Entry | None] = dict(self._entries(target.tree, of=target.id))
        left: dict[str, LeftAlone] = {}
        unknown = [p for p in have if p not in want]
        if target.meta.mode == "full":
            skipped = set(target.meta.skipped)
            for path in unknown:
                if path in skipped:
                    left[path] = LeftAlone(
                        path, "too_large", "over the size cap at the checkpoint: not recorded"
                    )
                else:
                    want[path] = None
        else:
            resolved = self._first_sightings(target, unknown, head=head)
            folders = _folders(want)
            for path in unknown:
                if path in folders:
                    # A folder at the target: whatever stands at its name now (a link, a
                    # file) came since, so it goes and the folder's files come back.
                    want[path] = None
                elif path in resolved:
                    want[path] = resolved[path]
                else:
                    left[path] = LeftAlone(
                        path, "not_checkpointed", "not checkpointed when the checkpoint was taken"
                    )
        deletes = sorted(p for p, entry in want.items() if entry is None and p in have)
        going = set(deletes)
        too_large_now = set(current.skipped)
        writes: dict[str, Entry] = {}
        for path, entry in sorted(want.items()):
            if entry is None or have.get(path) == entry:
                continue
            occupied = path not in have and self._lexists_here(path)
            if occupied and not self._empties(path, going):
                left[path] = self._untracked_reason(path, too_large_now)
                continue
            blocker = self._blocker(path, going)
            if blocker is not None:
                left[path] = LeftAlone(
                    path, "blocked", f"{blocker!r} is in the way and the store never held it"
                )
                continue
            writes[path] = entry
        for path in sorted(too_large_now):
            left.setdefault(
                path, LeftAlone(path, "too_large", "over the size cap now: never checkpointed")
            )
        return _Decision(writes=writes, deletes=deletes, left=left)

    def _first_sightings(
        self, target: _Commit, paths: list[str], *, head: str | None
    ) -> dict[str, Entry | None]:
        """For paths the ``only``-mode ``target`` did not hold: their state at the first
        checkpoint after it that saw them (absent, or present with some content)."""
        if not paths or head is None:
            return {}
        log = self._git.run(
            "log", "--reverse", "--format=%H%x00%T%x00%B%x00", f"{target.id}..{head}"
        )
        fields = [f.decode(errors="replace").strip() for f in log.split(b"\0")]
        pending = set(paths)
        found: dict[str, Entry | None] = {}
        for i in range(0, len(fields) - 2, 3):
            sha, tree, meta = fields[i], fields[i + 1], _Meta.parse(fields[i + 2])
            if not pending:
                break
            if meta is None:
                continue
            if meta.mode == "full":
                present = self._entries(tree, of=sha, paths=sorted(pending))
                for path in sorted(pending):
                    if path in present:
                        found[path] = present[path]
                    elif path not in meta.skipped:
                        found[path] = None
                break
            absent = set(meta.absent)
            for path in sorted(pending):
                if any(p in absent for p in _self_and_parents(path)):
                    found[path] = None
            seen = sorted(pending.intersection(meta.seen))
            if seen:
                found.update(self._entries(tree, of=sha, paths=seen))
            pending -= found.keys()
        return found

    def _empties(self, path: str, going: set[str]) -> bool:
        """True when ``path`` is a real folder holding nothing but files about to go."""
        top = self.workspace / path
        if top.is_symlink() or not top.is_dir():
            return False
        for folder, dirs, files in os.walk(top):
            base = Path(folder).relative_to(self.workspace).as_posix()
            names = files + [d for d in dirs if os.path.islink(os.path.join(folder, d))]
            if any(f"{base}/{name}" not in going for name in names):
                return False
        return True

    def _lexists_here(self, path: str) -> bool:
        """Whether something stands at ``path`` itself, looked for without following a link
        above it: beyond a link is outside the workspace (or elsewhere in it), and what is
        there never stands in the way (:meth:`_blocker` decides about the link)."""
        parts = path.split("/")
        for depth in range(1, len(parts)):
            try:
                st = os.lstat(self.workspace / "/".join(parts[:depth]))
            except (FileNotFoundError, NotADirectoryError):
                return False
            if not stat.S_ISDIR(st.st_mode):
                return False
        return os.path.lexists(self.workspace / path)

    def _blocker(self, path: str, going: set[str]) -> str | None:
        """A parent of ``path`` that is a file or a link and stays: writing would fail."""
        parts = path.split("/")
        for depth in range(1, len(parts)):
            parent = "/".join(parts[:depth])
            try:
                st = os.lstat(self.workspace / parent)
            except (FileNotFoundError, NotADirectoryError):
                return None
            if not stat.S_ISDIR(st.st_mode) and parent not in going:
                return parent
        return None

    def _untracked_reason(self, path: str, too_large: set[str]) -> LeftAlone:
        if path in too_large:
            return LeftAlone(path, "too_large", "over the size cap now: its content is not saved")
        ignored = self._git.run("ls-files", "-z", "-o", "-i", "--exclude-standard", "--", path)
        if ignored:
            return LeftAlone(path, "ignored", "ignored now: its content is not saved")
        return LeftAlone(
            path, "blocked", "something the store never held is there (a folder, a special file)"
        )

    def _check_objects(self, target: _Commit, decision: _Decision) -> None:
        """Every object to write back is readable, before anything changes."""
        if not decision.writes:
            return
        shas = "".join(f"{sha}\n" for _, sha in decision.writes.values())
        out = self._git.run("cat-file", "--batch-check", stdin=shas.encode())
        missing = [ln for ln in out.decode().splitlines() if ln.endswith(" missing")]
        if missing:
            raise UnknownCheckpointError(
                target.id, f"is damaged: {len(missing)} of its files cannot be read"
            )

    # -- applying ------------------------------------------------------------------------------

    def _apply(self, workspace: Workspace, decision: _Decision) -> None:
        for path in decision.deletes:
            _guarded(path, partial(workspace.remove, path))
        if not decision.writes:
            return
        reader = self._git.popen("cat-file", "--batch")
        assert reader.stdin is not None and reader.stdout is not None
        try:
            for path, (mode, sha) in decision.writes.items():
                reader.stdin.write(f"{sha}\n".encode())
                reader.stdin.flush()
                header = reader.stdout.readline().decode().split()
                if len(header) != 3 or header[1] != "blob":
                    raise RestoreError(path, f"the store cannot read its content ({sha})")
                data = _read_exact(reader.stdout, int(header[2]))
                reader.stdout.read(1)  # the newline after each object
                _guarded(path, partial(workspace.write, path, mode, data))
        finally:
            reader.stdin.close()
            reader.stdout.close()
            reader.wait()

    def _left(self, decision: _Decision, *, index: Path | None = None) -> dict[str, LeftAlone]:
        """Everything a restore leaves alone: its own decisions, then what the store never
        held (ignored paths, nested repositories, files never checkpointed)."""
        left = dict(decision.left)
        for raw in _split(
            self._git.run(
                "ls-files", "-z", "-o", "-i", "--exclude-standard", "--directory", index=index
            )
        ):
            path = os.fsdecode(raw)
            left.setdefault(path, LeftAlone(path, "ignored", "ignored (.gitignore)"))
        for raw in _split(
            self._git.run(
                "ls-files",
                "-z",
                "-o",
                "--exclude-standard",
                "--directory",
                "--no-empty-directory",
                index=index,
            )
        ):
            path = os.fsdecode(raw)
            if path in left or path in decision.writes:
                continue
            if path.endswith("/") and os.path.lexists(self.workspace / path / ".git"):
                left[path] = LeftAlone(path, "not_checkpointed", "a nested git repository")
            else:
                left[path] = LeftAlone(path, "not_checkpointed", "never checkpointed")
        return left

    def _report(
        self,
        target: _Commit,
        current_tree: str,
        decision: _Decision,
        left: dict[str, LeftAlone],
        *,
        before: str | None,
    ) -> RestorePlan:
        return RestorePlan(
            target=target.id,
            restore=sorted(decision.writes),
            delete=list(decision.deletes),
            left=[left[p] for p in sorted(left)],
            diffstat=self._diffstat(current_tree, decision),
            before=before,
        )

    def _diffstat(self, current_tree: str, decision: _Decision) -> list[FileStat]:
        if not decision.writes and not decision.deletes:
            return []
        scratch = self.git_dir / f"diff-index.{os.getpid()}.{threading.get_ident()}"
        try:
            self._git.run("read-tree", current_tree, index=scratch)
            lines = [f"{mode} {sha}\t{path}" for path, (mode, sha) in decision.writes.items()]
            lines += [f"0 {'0' * 40}\t{path}" for path in decision.deletes]
            self._git.run("update-index", "-z", "--index-info", stdin=_nul(lines), index=scratch)
            wanted = self._git.run("write-tree", index=scratch).decode().strip()
        finally:
            scratch.unlink(missing_ok=True)
        out = self._git.run(
            "diff-tree", "-r", "-z", "--numstat", "--no-renames", current_tree, wanted
        )
        stats: list[FileStat] = []
        for record in _split(out):
            added, removed, path = record.split(b"\t", 2)
            binary = added == b"-"
            stats.append(
                FileStat(
                    path=os.fsdecode(path),
                    insertions=None if binary else int(added),
                    deletions=None if binary else int(removed),
                    binary=binary,
                )
            )
        return stats

    # -- plumbing --------------------------------------------------------------------------------

    def _only(self, only: Iterable[str] | None) -> list[str] | None:
        """``only`` as sorted workspace-relative paths; those outside the workspace dropped."""
        if only is None:
            return None
        out: set[str] = set()
        for raw in only:
            path = Path(raw)
            if path.is_absolute():
                rel = _relative_to(Path(os.path.normpath(path)), self.workspace)
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
                inside = "" if real == self.workspace else _relative_to(real, self.workspace)
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


def _guarded(path: str, action: Callable[[], None]) -> None:
    """Run one file operation; an OS error becomes a :class:`RestoreError` naming the path."""
    try:
        action()
    except OSError as exc:
        reason = exc.strerror or errno.errorcode.get(exc.errno or 0, str(exc))
        raise RestoreError(path, reason) from None


def _read_exact(stream: Any, size: int) -> bytes:
    chunks: list[bytes] = []
    remaining = size
    while remaining:
        chunk = stream.read(remaining)
        if not chunk:
            raise CheckpointError("git cat-file stopped in the middle of an object")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def _changes(status: bytes) -> Iterator[tuple[bool, str]]:
    """(tracked, path) for each path ``git status --porcelain=v2 -z`` says differs from the
    index: tracked files changed in the work tree, and untracked ones."""
    for record in _split(status):
        if record.startswith(b"? "):
            yield False, os.fsdecode(record[2:])
        elif record.startswith(b"1 "):
            fields = record.split(b" ", 8)
            if fields[1][1:2] != b".":  # Y: the work tree against the index
                yield True, os.fsdecode(fields[8])


def _split(out: bytes) -> list[bytes]:
    return [part for part in out.split(b"\0") if part]


def _nul(paths: list[str]) -> bytes:
    return b"".join(os.fsencode(p) + b"\0" for p in paths)


def _relative_to(path: Path, root: Path) -> str | None:
    """``path`` relative to ``root`` in posix form, or None when outside (or the root)."""
    try:
        rel = path.relative_to(root)
    except ValueError:
        return None
    text = rel.as_posix()
    return None if text == "." else text


def _folders(entries: Iterable[str]) -> set[str]:
    """Every folder above the given paths (``a`` and ``a/b`` for ``a/b/c``)."""
    found: set[str] = set()
    for path in entries:
        parts = path.split("/")
        found.update("/".join(parts[:depth]) for depth in range(1, len(parts)))
    return found


def _self_and_parents(path: str) -> Iterator[str]:
    parts = path.split("/")
    for depth in range(len(parts), 0, -1):
        yield "/".join(parts[:depth])
