"""Starting a background pod: its log never follows a link someone planted."""

from __future__ import annotations

import os
import signal
import stat
import time
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


def alive(pid: int) -> bool:
    """Running (not gone, not a zombie: the pod is this test's child and nobody reaps it)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except FileNotFoundError:
        return False


def test_a_spawned_pod_writes_its_log_through_the_capped_writer(
    monkeypatch: pytest.MonkeyPatch, short_dir: Path, workspace: Path
) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(short_dir))
    info = spawn_pod(workspace, extra_args=["--provider", "scripted"], timeout_s=20)
    log = short_dir / "pod" / f"{info.name}.log"
    try:
        # The log writer is a thread of the pod: its stderr is a pipe, not the file.
        stderr = os.readlink(f"/proc/{info.pid}/fd/2")
        assert stderr.startswith("pipe:"), stderr
        for _ in range(100):
            if "listening on" in log.read_text():
                break
            time.sleep(0.05)
        assert f"pod {info.name} listening on {info.socket}" in log.read_text()
    finally:
        os.kill(info.pid, signal.SIGTERM)
        for _ in range(200):
            if not alive(info.pid):
                break
            time.sleep(0.05)
    assert f"pod {info.name} stopped" in log.read_text()  # the last words landed too
