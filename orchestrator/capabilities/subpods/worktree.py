"""A child's own copy of the workspace (``isolation = "worktree"``) and the diff of its work.

The copy is made by the pod, never by running git in the workspace's repository: the model
asks for it, and a cloned repository's ``.git/config`` can name programs that git runs on
its own (``core.fsmonitor``, filter drivers, external diff, textconv), which would run
outside the sandbox and unasked. So the workspace is copied whole (without ``.git`` and
``.pod``), uncommitted and untracked files included, next to a snapshot of how it started,
and the diff is ``git diff --no-index`` of the two, outside any repository.
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
"""The base of a copy: its snapshot is ``<worktree>.snapshot``."""


class WorktreeError(PodRuntimeError):
    """The child's worktree could not be made or read; the message says why."""


@dataclass(frozen=True, slots=True)
class WorktreeDiff:
    """The child's changes: ``git diff --stat`` and the diff itself."""

    stat: str
    diff: str


async def _git(cwd: Path, *args: str, check: bool = True) -> str:
    # No system config, and nothing configurable runs: external diff and textconv off.
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", "GIT_CONFIG_NOSYSTEM": "1"}
    args = (args[0], "--no-ext-diff", "--no-textconv", *args[1:])
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


async def make_worktree(workspace: Path, target: Path) -> str:
    """Make the child's copy at ``target`` (idempotent: an existing one is kept, so a child
    resumed after a crash finds its work); returns the base its diff is taken against."""
    base_file = target.with_name(target.name + ".base")
    if target.exists() and base_file.exists():
        return base_file.read_text().strip()
    ignore = shutil.ignore_patterns(".git", ".pod")
    await asyncio.to_thread(shutil.copytree, workspace, target, symlinks=True, ignore=ignore)
    snapshot = target.with_name(target.name + ".snapshot")
    await asyncio.to_thread(shutil.copytree, target, snapshot, symlinks=True)
    base_file.write_text(COPY_BASE + "\n")
    return COPY_BASE


async def worktree_diff(target: Path, base: str) -> WorktreeDiff:
    """What the child changed in its copy since it began (``base`` names the snapshot)."""
    if base != COPY_BASE:
        raise WorktreeError(f"unknown worktree base {base!r}")
    snapshot = target.with_name(target.name + ".snapshot")
    names = (snapshot.name, target.name)
    diff = await _git(target.parent, "diff", "--no-index", "--no-color", *names, check=False)
    stat = await _git(target.parent, "diff", "--no-index", "--stat", *names, check=False)
    return WorktreeDiff(stat=stat.strip(), diff=diff)
