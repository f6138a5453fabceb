"""Starting a background pod: its log never follows a link someone planted."""

from __future__ import annotations

import os
import signal
import stat
import time
from pathlib import Path

import pytest

from cli.errors import CliError
from cli.pods.discovery import default_name, list_pods
from cli.pods.start import spawn_pod
from cli.pods.table import PodListing, tree_order


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


def _row(name: str, parent: str = "") -> PodListing:
    return PodListing(
        name=name, workspace=f"/home/someone/src/{name}", socket=f"/run/{name}.sock",
        pid=4242, parent=parent, loaded=True, state="running", clients=1,
        last_active_ms=None, rss_share_bytes=3 * 1024 * 1024, in_host=True,
    )  # fmt: skip


@pytest.mark.parametrize("width", [40, 80, 160])
def test_the_pod_table_never_cuts_a_name_and_says_what_it_left_out(width: int) -> None:
    from rich.console import Console

    from cli.pods.table import pods_table

    long = "a-pod-name-of-fifty-characters-for-the-table-tests"
    rows = tree_order([_row("child", parent=long), _row(long), _row("solo")])
    console = Console(width=width, record=True)
    console.print(pods_table(rows, width=width), crop=False)
    lines = console.export_text().splitlines()
    assert [line.split("│")[1].strip() for line in lines if "│" in line and "running" in line] == [
        long,
        "└ child",
        "solo",
    ]
    if width == 160:
        assert "4242" in lines[3] and "3.0 MiB" in lines[3] and "(" not in lines[-1]
    else:
        bottom = lines.index(next(line for line in lines if line.startswith("└")))
        caption = " ".join(" ".join(lines[bottom + 1 :]).split())
        assert caption.startswith("(") and "workspace: a wider terminal or --json" in caption
