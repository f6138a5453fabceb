"""Starting a background pod: its log never follows a link someone planted."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from cli.errors import CliError
from cli.pods import default_name, list_pods, spawn_pod


def test_spawn_refuses_a_symlink_planted_at_the_log_path(
    monkeypatch: pytest.MonkeyPatch, short_dir: Path, workspace: Path, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(short_dir))
    victim = tmp_path / "bashrc"
    victim.write_text("export PATH=$HOME/bin:$PATH\n")
    os.chmod(victim, 0o644)
    base = short_dir / "pod"
    base.mkdir(mode=0o700)
    (base / f"{default_name(workspace)}.log").symlink_to(victim)
    with pytest.raises(CliError) as err:
        spawn_pod(workspace, timeout_s=5)
    assert "symbolic link" in str(err.value)
    assert victim.read_text() == "export PATH=$HOME/bin:$PATH\n"
    assert stat.S_IMODE(victim.stat().st_mode) == 0o644
    assert list_pods() == []  # nothing was started


def test_a_shared_runtime_dir_is_refused_before_anything_is_written(
    monkeypatch: pytest.MonkeyPatch, short_dir: Path, workspace: Path
) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(short_dir))
    base = short_dir / "pod"
    base.mkdir()
    os.chmod(base, 0o777)
    with pytest.raises(Exception) as err:
        spawn_pod(workspace, timeout_s=5)
    assert "refusing the runtime directory" in str(err.value) and "0777" in str(err.value)
    assert list(base.iterdir()) == []
