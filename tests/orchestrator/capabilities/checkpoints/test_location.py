"""Where a session's checkpoints live, and the folders refused there."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from orchestrator.capabilities.checkpoints import CheckpointDirError, checkpoint_dir


def test_the_store_is_a_private_folder_beside_the_session(tmp_path: Path) -> None:
    session = tmp_path / "sessions" / "20261126-101500.jsonl"
    session.parent.mkdir()
    old = os.umask(0o022)
    try:
        path = checkpoint_dir(session)
    finally:
        os.umask(old)
    assert path == tmp_path / "sessions" / "20261126-101500.checkpoints"
    assert stat.S_IMODE(path.stat().st_mode) == 0o700
    assert checkpoint_dir(session) == path  # an existing one of ours is used as it is


def test_a_link_a_file_or_a_shared_folder_is_refused(tmp_path: Path) -> None:
    session = tmp_path / "s.jsonl"
    target = tmp_path / "elsewhere"
    target.mkdir(mode=0o700)
    os.symlink(target, tmp_path / "s.checkpoints")
    with pytest.raises(CheckpointDirError, match="symbolic link"):
        checkpoint_dir(session)
    (tmp_path / "s.checkpoints").unlink()
    (tmp_path / "s.checkpoints").write_text("")
    with pytest.raises(CheckpointDirError, match="not a directory"):
        checkpoint_dir(session)
    (tmp_path / "s.checkpoints").unlink()
    (tmp_path / "s.checkpoints").mkdir()
    (tmp_path / "s.checkpoints").chmod(0o755)
    with pytest.raises(CheckpointDirError, match="0755"):
        checkpoint_dir(session)
    assert stat.S_IMODE((tmp_path / "s.checkpoints").stat().st_mode) == 0o755  # left as it was


def test_a_missing_session_folder_is_an_error_not_a_tree_of_new_folders(tmp_path: Path) -> None:
    with pytest.raises(CheckpointDirError, match="cannot create"):
        checkpoint_dir(tmp_path / "missing" / "s.jsonl")
