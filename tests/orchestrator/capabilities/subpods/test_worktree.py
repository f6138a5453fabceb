"""A child's own copy of the workspace, with real git and real files."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from orchestrator.capabilities.subpods.worktree import COPY_BASE, make_worktree, worktree_diff


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("one\n")
    _git(ws, "init", "-q")
    _git(ws, "add", ".")
    _git(ws, "commit", "-qm", "init")
    return ws


async def test_a_git_worktree_starts_from_the_uncommitted_tree(repo: Path, tmp_path: Path) -> None:
    (repo / "a.txt").write_text("one\ntwo (not committed)\n")
    target = tmp_path / "children" / "c.worktree"
    target.parent.mkdir()
    base = await make_worktree(repo, target)
    assert (target / "a.txt").read_text() == "one\ntwo (not committed)\n"
    assert await make_worktree(repo, target) == base  # idempotent: a resumed child finds it
    (target / "a.txt").write_text("one\nthree\n")
    (target / "new.txt").write_text("fresh\n")
    diff = await worktree_diff(target, base)
    assert "+three" in diff.diff and "-two (not committed)" in diff.diff
    assert "new.txt" in diff.stat and "+fresh" in diff.diff
    assert (repo / "a.txt").read_text() == "one\ntwo (not committed)\n"  # the parent's files
    assert not (repo / "new.txt").exists()


async def test_outside_git_the_worktree_is_a_copy(tmp_path: Path) -> None:
    ws = tmp_path / "plain"
    (ws / ".pod").mkdir(parents=True)
    (ws / "b.txt").write_text("b\n")
    target = tmp_path / "c.worktree"
    assert await make_worktree(ws, target) == COPY_BASE
    assert not (target / ".pod").exists()
    (target / "b.txt").write_text("b\nmore\n")
    diff = await worktree_diff(target, COPY_BASE)
    assert "+more" in diff.diff and "b.txt" in diff.stat
    assert (ws / "b.txt").read_text() == "b\n"


async def test_a_cloned_repositorys_git_config_runs_nothing(repo: Path, tmp_path: Path) -> None:
    """The model asks for the worktree: programs a repository's config names must not run."""
    marker = tmp_path / "ran"
    evil = f"!touch {marker}"
    _git(repo, "config", "core.fsmonitor", f"touch {marker}; false")
    _git(repo, "config", "filter.evil.clean", f"sh -c 'touch {marker}; cat'")
    _git(repo, "config", "diff.external", f"sh -c 'touch {marker}'")
    _git(repo, "config", "diff.evil.textconv", f"sh -c 'touch {marker}; cat'")
    _git(repo, "config", "alias.diff", evil)
    (repo / ".gitattributes").write_text("* filter=evil diff=evil\n")
    (repo / "a.txt").write_text("changed\n")
    target = tmp_path / "c.worktree"
    base = await make_worktree(repo, target)
    (target / "a.txt").write_text("changed again\n")
    diff = await worktree_diff(target, base)
    assert "+changed again" in diff.diff
    assert not marker.exists()
