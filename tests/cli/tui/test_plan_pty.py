"""Shift-Tab in the real ``pod chat`` (tmux): it cycles the pod's permission mode from the
prompt editor, and the status line shows plan mode."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli.tui.test_chat_pty import REPO, Tmux, ask, dirs, status_line

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")

__all__ = ["dirs"]  # the fixture, shared with test_chat_pty


def test_shift_tab_cycles_the_mode_in_a_terminal(dirs: tuple[Path, Path]) -> None:
    root, sock = dirs
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env.update(XDG_RUNTIME_DIR=str(root / "run"), XDG_STATE_HOME=str(root / "state"))
    command = (
        f"env -u ANTHROPIC_API_KEY -u ANTHROPIC_BASE_URL -u POD_NO_HOST "
        f"XDG_RUNTIME_DIR={shlex.quote(env['XDG_RUNTIME_DIR'])} "
        f"XDG_STATE_HOME={shlex.quote(env['XDG_STATE_HOME'])} "
        f"{shlex.quote(sys.executable)} -m cli chat --workspace {shlex.quote(str(root / 'ws'))}; "
        "echo UI-EXITED-$?; sleep 60"
    )
    tmux = Tmux(f"podplan{os.getpid()}")
    try:
        tmux.attach(command)
        tmux.wait(lambda s: "Idle" in status_line(s), "the UI attached to a fresh pod")
        tmux.type("draft")
        tmux.keys("BTab")  # what a terminal sends for Shift-Tab
        screen = tmux.wait(lambda s: "plan mode" in status_line(s), "plan mode on the status line")
        assert ask(sock, "get_status")["permission_mode"] == "plan"
        assert "▊ draft" in screen  # the typed text stays in the editor
        tmux.keys("BTab")
        tmux.wait(lambda s: "plan mode" not in status_line(s), "back to default")
        assert ask(sock, "get_status")["permission_mode"] == "default"
    finally:
        tmux.kill()
        if sock.exists():
            subprocess.run(
                [sys.executable, "-m", "cli", "shutdown", "--socket", str(sock)],
                cwd=REPO,
                env=env,
                capture_output=True,
                timeout=20,
                check=False,
            )
    deadline = time.monotonic() + 20
    host = root / "run" / "pod" / "host.sock"
    while (sock.exists() or host.exists()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not sock.exists(), "the background pod did not shut down"
