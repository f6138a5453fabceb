"""Taking snapshots: the chain of checkpoints in the shadow repository, and reading it back.

A snapshot asks ``git status`` (with the untracked cache, so a snapshot of a large workspace
costs a walk of what changed, not a read of everything) which files differ from the store's
index, checks each of those with ``lstat`` (too large, gone, not a regular file or a link),
updates the index with them, writes the tree and commits it on top of the previous
checkpoint. Checkpoints form one chain (``refs/heads/checkpoints``), so every one stays
reachable; git never collects garbage here, and the chain packs loose objects itself once
enough have piled up, at the end of a snapshot.

When nothing changed, the snapshot returns the previous checkpoint's id: two prompts with the
same workspace share a checkpoint.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from orchestrator.capabilities.checkpoints.errors import GitCommandError, UnknownCheckpointError
from orchestrator.capabilities.checkpoints.files import MODE_EXEC, MODE_FILE, MODE_LINK
from orchestrator.capabilities.checkpoints.git import Git
from orchestrator.capabilities.checkpoints.plumbing import changes, join_nul, split_nul
from orchestrator.capabilities.checkpoints.records import Commit, Entry, Meta, Staged

__all__ = ["CONSOLIDATE_AFTER_PACKS", "PACK_AFTER_OBJECTS", "REF", "Chain"]

REF = "refs/heads/checkpoints"
PACK_AFTER_OBJECTS = 1_000
"""Loose objects written since the last pack after which a snapshot packs them (one pack
file instead of thousands of 4 KiB files on disk)."""
CONSOLIDATE_AFTER_PACKS = 20
_ID = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")
_TRACKED_MODES = (MODE_FILE, MODE_EXEC, MODE_LINK)


class Chain:
    """The chain of checkpoints of one workspace: staging it into the store's index,
    committing that, and reading checkpoints back.

    Not locked: :class:`~orchestrator.capabilities.checkpoints.store.CheckpointStore` calls it
    under its guard, and it caches what this process last wrote (the head, the index's tree
    and file count, the loose objects) so that a snapshot of an unchanged workspace is cheap.
    """

    def __init__(self, git: Git, git_dir: Path, workspace: Path, *, max_file_bytes: int) -> None:
        self.git = git
        self.git_dir = git_dir
        self.workspace = workspace
        self.max_file_bytes = max_file_bytes
        self._head: Commit | None = None
        self._head_known = False
        self._index_files: int | None = None
        self._index_tree: str | None = None
        """The tree of the store's index as this process last wrote it (None: unknown)."""
        self._loose: int | None = None

    # -- snapshots ------------------------------------------------------------------------------

    def snapshot(self, only: list[str] | None, *, refresh: bool) -> tuple[Commit, Staged | None]:
        """Stage and commit; the staged state is None when the previous checkpoint was reused."""
        staged = self.stage(only, refresh=refresh)
        head = self.head_commit()
        if head is not None and head.tree == staged.tree and head.meta == staged.meta:
            return head, None
        parents = ["-p", head.id] if head is not None else []
        commit_id = (
            self.git.run("commit-tree", staged.tree, *parents, stdin=staged.meta.message().encode())
            .decode()
            .strip()
        )
        self._set_ref(commit_id)
        self._head = Commit(commit_id, staged.tree, staged.meta)
        self._maybe_pack(staged.written + 1)
        return self._head, staged

    def stage(self, only: list[str] | None, *, refresh: bool, index: Path | None = None) -> Staged:
        """Bring the index (``index``: a scratch copy) up to date with the workspace."""
        if only is not None and refresh:
            # Files already in the store changed by anyone count too, not only ``only``.
            changed = self.git.run("diff-files", "--name-only", "-z", index=index)
            only = sorted({*only, *(os.fsdecode(p) for p in split_nul(changed))})
        if only is not None and not only:
            status = b""
        else:
            args = ["status", "--porcelain=v2", "-z", "--untracked-files=all"]
            args += ["--ignore-submodules=all", "--no-renames"]
            status = self.git.run(*args, *(["--", *only] if only else []), index=index)
        add: list[str] = []
        remove: list[str] = []
        skipped: list[str] = []
        new: list[str] = []
        real_dirs: set[str] = set()
        for tracked, path in changes(status):
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
            self.git.run(
                "update-index",
                "--force-remove",
                "-z",
                "--stdin",
                stdin=join_nul(remove),
                index=index,
            )
        if add:
            # --replace: a folder that became a file (or a link) leaves the index for it.
            self.git.run(
                "update-index",
                "--add",
                "--replace",
                "-z",
                "--stdin",
                stdin=join_nul(add),
                index=index,
            )
        if index is None and not (add or remove) and self._index_tree is not None:
            tree = self._index_tree  # nothing changed since this process last wrote it
        else:
            tree = self.git.run("write-tree", index=index).decode().strip()
            if index is None:
                self._index_tree = tree
        if index is not None:
            files = self._count_index(index)
        else:
            files = (self._index_files or 0) + len(new) - len(remove)
            self._index_files = files
        if only is None:
            meta = Meta(mode="full", files=files, skipped=tuple(sorted(skipped)))
        else:
            absent = [p for p in only if not os.path.lexists(self.workspace / p)]
            meta = Meta(
                mode="only",
                files=files,
                skipped=tuple(sorted(skipped)),
                seen=tuple(sorted(new)),
                absent=tuple(sorted(absent)),
            )
        folders = {
            "/".join(p.split("/")[:d]) for p in add + remove for d in range(p.count("/") + 1)
        }
        return Staged(tree=tree, meta=meta, written=len(add) + len(folders) if add or remove else 0)

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
        return len(split_nul(self.git.run("ls-files", "-z", index=index)))

    def _maybe_pack(self, written: int) -> None:
        """Pack loose objects once enough piled up (never git's own auto-gc)."""
        if self._loose is None:
            counts = self.git.run("count-objects", "-v").decode()
            found = re.search(r"^count: (\d+)", counts, flags=re.M)
            self._loose = int(found[1]) if found else 0
        else:
            self._loose += written
        if self._loose < PACK_AFTER_OBJECTS:
            return
        packs = len(list((self.git_dir / "objects" / "pack").glob("*.pack")))
        everything = ["-a"] if packs >= CONSOLIDATE_AFTER_PACKS else []
        self.git.run("repack", "-d", "-q", "--no-write-bitmap-index", *everything)
        self._loose = 0

    # -- reading checkpoints -------------------------------------------------------------------

    def head_commit(self) -> Commit | None:
        """The last checkpoint of the chain (None before the first)."""
        if not self._head_known:
            out = self.git.run("rev-parse", "--verify", "-q", f"{REF}^{{commit}}", ok=(0, 1))
            sha = out.decode().strip()
            self._head = self.read(sha) if sha else None
            self._head_known = True
        return self._head

    def head_id(self) -> str | None:
        """The id of :meth:`head_commit`, or None."""
        head = self.head_commit()
        return head.id if head else None

    def read(self, target: str) -> Commit:
        """The checkpoint ``target``; :class:`UnknownCheckpointError` if not one of ours."""
        if not isinstance(target, str) or not _ID.fullmatch(target):
            raise UnknownCheckpointError(
                str(target), "is not a checkpoint id (a commit id of 40 hex digits)"
            )
        try:
            raw = self.git.run("cat-file", "commit", target)
        except GitCommandError:
            raise UnknownCheckpointError(target, f"is not in the store {self.git_dir}") from None
        text = raw.decode(errors="replace")
        header, _, message = text.partition("\n\n")
        tree = next((ln[5:] for ln in header.splitlines() if ln.startswith("tree ")), "")
        meta = Meta.parse(message)
        if meta is None or not tree:
            raise UnknownCheckpointError(target, "is a commit, but not a checkpoint of this store")
        return Commit(target, tree, meta)

    def entries(self, tree: str, *, of: str, paths: list[str] | None = None) -> dict[str, Entry]:
        """The files and links of ``tree`` (under ``paths`` if given); ``of`` names the
        checkpoint in the error when the tree cannot be read."""
        args = ["ls-tree", "-r", "-z", "--full-tree", tree]
        try:
            out = self.git.run(*args, *(["--", *paths] if paths else []))
        except GitCommandError as exc:
            raise UnknownCheckpointError(of, f"is damaged: {exc}") from None
        entries: dict[str, Entry] = {}
        for record in split_nul(out):
            info, _, path = record.partition(b"\t")
            mode, _kind, sha = info.decode().split(" ")
            if mode in _TRACKED_MODES:
                entries[os.fsdecode(path)] = (mode, sha)
        return entries
