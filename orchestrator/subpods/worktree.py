"""A child's own copy of the workspace (``isolation = "worktree"``) and the diff of its work.

In a git repository the copy is a detached ``git worktree`` at a commit of the parent's
working tree as it is now (``git stash create``: uncommitted changes to tracked files
included, the parent's files untouched); untracked files are not carried over. Elsewhere it is
a plain copy of the workspace (without ``.git`` and ``.pod``). Either way the diff is the
child's changes against what it started from, untracked new files included.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from orchestrator.errors import PodRuntimeError

GIT_TIMEOUT_S = 60.0
COPY_BASE = "copy"
"""The base of a copy that is not a git worktree: its snapshot is ``<worktree>.base``."""


class WorktreeError(PodRuntimeError):
    """The child's worktree could not be made or read; the message says why."""


@dataclass(frozen=True, slots=True)
class WorktreeDiff:
    """The child's changes: ``git diff --stat`` and the diff itself."""

    stat: str
    diff: str


async def _git(cwd: Path, *args: str, check: bool = True) -> str:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
    try:
        proc = await asyncio.create_subprocess_exec(
            "git", *args, cwd=cwd, env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
    except OSError as exc:
        raise WorktreeError(f"cannot run git: {exc}") from None
    try:
        out, err = await asyncio.wait_for(proc.communicate(), GIT_TIMEOUT_S)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise WorktreeError(f"git {args[0]} took longer than {GIT_TIMEOUT_S:g} s") from None
    if check and proc.returncode != 0:
        message = err.decode(errors="replace").strip().splitlines()[-1:] or ["failed"]
        raise WorktreeError(f"git {args[0]}: {message[0]}")
    return out.decode(errors="replace")


async def is_git_repo(path: Path) -> bool:
    """Whether ``path`` is inside a git work tree with at least one commit."""
    if shutil.which("git") is None:
        return False
    try:
        await _git(path, "rev-parse", "--verify", "HEAD")
    except WorktreeError:
        return False
    return True


async def make_worktree(workspace: Path, target: Path) -> str:
    """Make the child's copy at ``target`` (idempotent: an existing one is kept, so a child
    resumed after a crash finds its work); returns the base its diff is taken against."""
    base_file = target.with_name(target.name + ".base")
    if target.exists() and base_file.exists():
        return base_file.read_text().strip()
    if await is_git_repo(workspace):
        base = (await _git(workspace, "stash", "create")).strip()
        if not base:
            base = (await _git(workspace, "rev-parse", "HEAD")).strip()
        await _git(workspace, "worktree", "add", "--detach", str(target), base)
    else:
        base = COPY_BASE
        ignore = shutil.ignore_patterns(".git", ".pod")
        await asyncio.to_thread(shutil.copytree, workspace, target, symlinks=True, ignore=ignore)
        snapshot = target.with_name(target.name + ".snapshot")
        await asyncio.to_thread(shutil.copytree, target, snapshot, symlinks=True)
    base_file.write_text(base + "\n")
    return base


async def worktree_diff(target: Path, base: str) -> WorktreeDiff:
    """What the child changed in its copy since ``base``."""
    if base == COPY_BASE:
        snapshot = target.with_name(target.name + ".snapshot")
        diff = await _git(
            target.parent, "diff", "--no-index", "--no-color", snapshot.name, target.name,
            check=False,
        )  # fmt: skip
        stat = await _git(
            target.parent, "diff", "--no-index", "--stat", snapshot.name, target.name,
            check=False,
        )  # fmt: skip
        return WorktreeDiff(stat=stat.strip(), diff=diff)
    # Intent-to-add makes new files show in the diff without staging their content.
    await _git(target, "add", "--intent-to-add", "--all")
    stat = await _git(target, "diff", "--stat", base)
    diff = await _git(target, "diff", "--no-color", base)
    return WorktreeDiff(stat=stat.strip(), diff=diff)
