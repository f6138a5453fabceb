"""Taking a snapshot of the workspace's protected paths: one bounded walk
(:func:`~orchestrator.adapters.sandbox.protected_scan.scan_protected`), ``lstat`` of each path found,
and inside a protected folder only the files that configure commands.

Cheap on purpose (it runs before and after every sandboxed command): a file is fingerprinted
by ``lstat`` (type, inode, size, mtime) and, when small, by the hash of its bytes, which are
kept so that a change can be undone (:mod:`orchestrator.adapters.sandbox.quarantine`).
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from orchestrator.adapters.sandbox.planted import Fingerprint, Kind, RootSnapshot, Snapshot
from orchestrator.adapters.sandbox.protected_scan import scan_protected

__all__ = ["DATA_BUDGET", "FOLDER_ENTRIES", "SMALL_FILE", "fingerprint", "take_snapshot"]

SMALL_FILE = 64 * 1024
"""Files up to this size are hashed and their bytes kept (git configs, hooks, pod configs)."""

DATA_BUDGET = 4 * 1024 * 1024
"""Bytes kept per snapshot; past it, files are compared by ``lstat`` alone and a change to
one cannot be undone from the snapshot (it is still held)."""

FOLDER_ENTRIES = 500
"""Entries looked at inside one protected folder before its walk stops."""

GIT_SKIPPED = frozenset({"objects", "refs", "logs", "lfs", "rr-cache", "fsmonitor--daemon"})
"""Folders of a git dir that configure nothing (and can be large)."""

GIT_CONFIG_NAMES = frozenset({"config", "config.worktree", "commondir", "gitdir"})

NOT_WATCHED = {".pod": frozenset({"scratch"})}
"""Folders of a protected folder that hold output, not configuration (the pod's scratch)."""


@dataclass
class _Budget:
    left: int = DATA_BUDGET


def _kind(mode: int) -> Kind:
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISLNK(mode):
        return "link"
    return "other"


def fingerprint(path: Path, budget: _Budget | None = None) -> Fingerprint | None:
    """``path`` as ``lstat`` sees it, with a small file's bytes; None when it is not there."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    kind = _kind(st.st_mode)
    data: bytes | None = None
    digest: str | None = None
    if kind == "link":
        try:
            data = os.fsencode(os.readlink(path))
        except OSError:
            data = b""
    elif kind == "file" and st.st_size <= SMALL_FILE and (budget is None or budget.left > 0):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            fd = -1
        if fd >= 0:
            try:
                data = os.read(fd, SMALL_FILE + 1)[:SMALL_FILE]
            except OSError:
                data = None
            finally:
                os.close(fd)
        if data is not None:
            digest = hashlib.sha256(data).hexdigest()
            if budget is not None:
                budget.left -= len(data)
    return Fingerprint(
        kind=kind,
        ino=st.st_ino,
        dev=st.st_dev,
        size=st.st_size,
        mtime_ns=st.st_mtime_ns,
        mode=stat.S_IMODE(st.st_mode),
        digest=digest,
        data=data,
    )


def _git_tracked(rel: str) -> bool:
    parts = rel.split("/")
    return (
        parts[-1] in GIT_CONFIG_NAMES
        or "hooks" in parts[:-1]
        or parts[-2:] == ["info", "attributes"]
    )


def _folder_files(root: Path, name: str, budget: _Budget) -> tuple[dict[str, Fingerprint], bool]:
    """The tracked files of one protected folder (relative to it), and whether all were seen."""
    is_git = name.lower() == ".git"
    skipped = GIT_SKIPPED if is_git else NOT_WATCHED.get(name.lower(), frozenset())
    files: dict[str, Fingerprint] = {}
    stack = [""]
    seen = 0
    while stack:
        rel_dir = stack.pop()
        try:
            entries = list(os.scandir(root / rel_dir if rel_dir else root))
        except OSError:
            continue
        for entry in sorted(entries, key=lambda e: e.name):
            seen += 1
            if seen > FOLDER_ENTRIES:
                return files, False
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if is_dir:
                if not (rel_dir == "" and entry.name in skipped) and not (
                    is_git and entry.name in GIT_SKIPPED
                ):
                    stack.append(rel)
                continue
            # A link in a git dir is looked at wherever it is: `hooks` or `info` made a link
            # to a planted folder would otherwise pass as a file git never reads.
            if is_git and not _git_tracked(rel) and not entry.is_symlink():
                continue
            print_ = fingerprint(Path(entry.path), budget)
            if print_ is not None:
                files[rel] = print_
    return files, True


def take_snapshot(workspace: Path) -> Snapshot:
    """The workspace's protected paths now (blocking: run it in a thread from the loop)."""
    scan = scan_protected(workspace)
    budget = _Budget()
    roots: dict[str, RootSnapshot] = {}
    for path in scan.paths:
        top = fingerprint(path, budget)
        if top is None:
            continue  # gone between the walk and now
        rel = path.relative_to(workspace).as_posix()
        if top.kind == "dir":
            files, complete = _folder_files(path, path.name, budget)
            roots[rel] = RootSnapshot(rel, top, files, complete)
        else:
            roots[rel] = RootSnapshot(rel, top)
    return Snapshot(roots, scan.complete, scan)
