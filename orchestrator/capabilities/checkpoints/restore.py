"""Restoring a checkpoint: deciding what to write back, delete or leave, and doing it.

Restoring never follows a link and writes each file atomically (:mod:`.files`). The decision
compares the current state's tree with the target's; for an ``only``-mode target, a path it
did not hold is resolved by the first later checkpoint that saw it (:meth:`Restorer.decide`).
Every object to write back is checked readable before the first change.
"""

from __future__ import annotations

import os
import stat
import threading
from functools import partial
from pathlib import Path

from orchestrator.capabilities.checkpoints.errors import RestoreError, UnknownCheckpointError
from orchestrator.capabilities.checkpoints.files import Workspace
from orchestrator.capabilities.checkpoints.plumbing import (
    folders_above,
    guarded,
    join_nul,
    read_exact,
    self_and_parents,
    split_nul,
)
from orchestrator.capabilities.checkpoints.records import (
    Commit,
    Decision,
    Entry,
    FileStat,
    LeftAlone,
    Meta,
    RestorePlan,
)
from orchestrator.capabilities.checkpoints.snapshot import Chain

__all__ = ["Restorer"]


class Restorer:
    """Works out and applies restores against one :class:`Chain` (called under the store's
    guard, like the chain)."""

    def __init__(self, chain: Chain) -> None:
        self._chain = chain
        self._git = chain.git
        self.git_dir = chain.git_dir
        self.workspace = chain.workspace

    # -- deciding a restore ----------------------------------------------------------------------

    def decide(
        self, target: Commit, current_tree: str, current: Meta, *, head: str | None
    ) -> Decision:
        """Which files to write, which to delete, which to leave, to go from now to target."""
        have = self._chain.entries(current_tree, of="the current state")
        want: dict[str, Entry | None] = dict(self._chain.entries(target.tree, of=target.id))
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
            folders = folders_above(want)
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
        return Decision(writes=writes, deletes=deletes, left=left)

    def _first_sightings(
        self, target: Commit, paths: list[str], *, head: str | None
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
            sha, tree, meta = fields[i], fields[i + 1], Meta.parse(fields[i + 2])
            if not pending:
                break
            if meta is None:
                continue
            if meta.mode == "full":
                present = self._chain.entries(tree, of=sha, paths=sorted(pending))
                for path in sorted(pending):
                    if path in present:
                        found[path] = present[path]
                    elif path not in meta.skipped:
                        found[path] = None
                break
            absent = set(meta.absent)
            for path in sorted(pending):
                if any(p in absent for p in self_and_parents(path)):
                    found[path] = None
            seen = sorted(pending.intersection(meta.seen))
            if seen:
                found.update(self._chain.entries(tree, of=sha, paths=seen))
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

    def check_objects(self, target: Commit, decision: Decision) -> None:
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

    def apply(self, workspace: Workspace, decision: Decision) -> None:
        """Delete, then write back each file of ``decision``, read from the store's objects."""
        for path in decision.deletes:
            guarded(path, partial(workspace.remove, path))
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
                data = read_exact(reader.stdout, int(header[2]))
                reader.stdout.read(1)  # the newline after each object
                guarded(path, partial(workspace.write, path, mode, data))
        finally:
            reader.stdin.close()
            reader.stdout.close()
            reader.wait()

    def left(self, decision: Decision, *, index: Path | None = None) -> dict[str, LeftAlone]:
        """Everything a restore leaves alone: its own decisions, then what the store never
        held (ignored paths, nested repositories, files never checkpointed)."""
        left = dict(decision.left)
        for raw in split_nul(
            self._git.run(
                "ls-files", "-z", "-o", "-i", "--exclude-standard", "--directory", index=index
            )
        ):
            path = os.fsdecode(raw)
            left.setdefault(path, LeftAlone(path, "ignored", "ignored (.gitignore)"))
        for raw in split_nul(
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

    def report(
        self,
        target: Commit,
        current_tree: str,
        decision: Decision,
        left: dict[str, LeftAlone],
        *,
        before: str | None,
    ) -> RestorePlan:
        """The plan of ``decision`` (what a restore does or did), with its diffstat."""
        return RestorePlan(
            target=target.id,
            restore=sorted(decision.writes),
            delete=list(decision.deletes),
            left=[left[p] for p in sorted(left)],
            diffstat=self._diffstat(current_tree, decision),
            before=before,
        )

    def _diffstat(self, current_tree: str, decision: Decision) -> list[FileStat]:
        if not decision.writes and not decision.deletes:
            return []
        scratch = self.git_dir / f"diff-index.{os.getpid()}.{threading.get_ident()}"
        try:
            self._git.run("read-tree", current_tree, index=scratch)
            lines = [f"{mode} {sha}\t{path}" for path, (mode, sha) in decision.writes.items()]
            lines += [f"0 {'0' * 40}\t{path}" for path in decision.deletes]
            self._git.run(
                "update-index", "-z", "--index-info", stdin=join_nul(lines), index=scratch
            )
            wanted = self._git.run("write-tree", index=scratch).decode().strip()
        finally:
            scratch.unlink(missing_ok=True)
        out = self._git.run(
            "diff-tree", "-r", "-z", "--numstat", "--no-renames", current_tree, wanted
        )
        stats: list[FileStat] = []
        for record in split_nul(out):
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
