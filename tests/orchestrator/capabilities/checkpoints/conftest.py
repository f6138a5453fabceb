"""Real workspaces and stores for the checkpoint tests."""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.capabilities.checkpoints import CheckpointStore

State = dict[str, tuple[object, ...]]


def state(root: Path, *, skip: tuple[str, ...] = (".git",)) -> State:
    """Every entry under ``root`` (folders, links, files with bytes and executable bit)."""
    out: State = {}
    for folder, dirs, files in os.walk(root):
        rel = Path(folder).relative_to(root)
        dirs[:] = [d for d in dirs if (rel / d).as_posix() not in skip]
        for name in dirs + files:
            path = Path(folder) / name
            key = (rel / name).as_posix()
            st = path.lstat()
            if stat.S_ISLNK(st.st_mode):
                out[key] = ("link", os.readlink(path))
            elif stat.S_ISDIR(st.st_mode):
                out[key] = ("dir",)
            elif stat.S_ISREG(st.st_mode):
                out[key] = ("file", path.read_bytes(), bool(st.st_mode & stat.S_IXUSR))
            else:
                out[key] = ("special",)
    return out


def git(cwd: Path, *args: str) -> str:
    """Run the user's own git in ``cwd`` (a test repository), with a fixed identity."""
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A small project: text files in folders, a binary, a script, a link inside."""
    ws = tmp_path / "ws"
    (ws / "src" / "pkg").mkdir(parents=True)
    (ws / "README.md").write_text("# Project\n\nSome words.\n")
    (ws / "src" / "app.py").write_text("def main():\n    return 1\n")
    (ws / "src" / "pkg" / "util.py").write_text("X = 1\nY = 2\n")
    (ws / "data.bin").write_bytes(bytes(range(256)) * 4)
    script = ws / "run.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o755)
    os.symlink("src/app.py", ws / "app-link")
    return ws


@pytest.fixture
def store(tmp_path: Path, workspace: Path) -> Iterator[CheckpointStore]:
    """A store for ``workspace`` outside it, with a 64 KiB file cap."""
    with CheckpointStore(
        workspace,
        tmp_path / "state" / "s.checkpoints",
        max_file_bytes=64 * 1024,
        max_total_bytes=10 * 1024 * 1024,
    ) as opened:
        yield opened


@pytest.fixture(autouse=True)
def _state_dir(tmp_path: Path) -> None:
    (tmp_path / "state").mkdir(exist_ok=True)
