"""The bounded walk that finds a workspace's protected paths at any depth."""

from __future__ import annotations

import os
from pathlib import Path

from orchestrator.adapters.sandbox.protected_scan import scan_protected
from orchestrator.capabilities.permissions.protected import protected_names


def test_finds_every_protected_name_at_any_depth_without_entering_them(tmp_path: Path) -> None:
    deep = tmp_path / "a" / "b" / "c"
    deep.mkdir(parents=True)
    expected = set()
    for name in protected_names():
        path = deep / name
        if name.startswith(".") and "." not in name[1:] and name in (".git", ".pod", ".claude"):
            path.mkdir()
            (path / ".git").mkdir()  # inside a protected folder: not listed on its own
        else:
            path.write_text("x")
        expected.add(path)
    (tmp_path / ".GIT").mkdir()  # compared without case, as the permissions compare
    expected.add(tmp_path / ".GIT")
    scan = scan_protected(tmp_path)
    assert scan.complete
    assert set(scan.paths) == expected


def test_symlinks_are_listed_not_followed_and_dependencies_are_skipped(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (outside / "x").mkdir(parents=True)
    (outside / "x" / ".envrc").write_text("evil")
    ws = tmp_path / "ws"
    (ws / "node_modules" / "pkg").mkdir(parents=True)
    (ws / "node_modules" / "pkg" / ".npmrc").write_text("x")
    os.symlink(outside, ws / "link")
    os.symlink(outside / "x" / ".envrc", ws / ".envrc")
    scan = scan_protected(ws)
    assert scan.paths == (ws / ".envrc",)


def test_a_walk_past_its_bound_says_it_is_incomplete(tmp_path: Path) -> None:
    for i in range(30):
        (tmp_path / f"f{i}").write_text("")
    (tmp_path / "z").mkdir()
    (tmp_path / "z" / ".git").mkdir()
    assert not scan_protected(tmp_path, max_entries=10).complete
    assert scan_protected(tmp_path, max_entries=1000).complete
