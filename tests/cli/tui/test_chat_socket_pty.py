"""The real ``pod chat --socket PATH`` in a pseudo-terminal (tmux), on a pod that runs: the
command docs/fleet.md gives for a fleet's gateway socket (it did not exist: ``pod attach
--socket`` did)."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.tui.test_chat_pty import Tmux, ask, status_line

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")


@pytest.fixture
def served() -> Iterator[tuple[Path, Path]]:
    """A `pod serve` of a workspace on a socket of its own (scripted provider); its root."""
    root = Path(tempfile.mkdtemp(prefix="pod-cs"))
    for folder in ("run", "state", "ws"):
        (root / folder).mkdir()
    sock = root / "api.sock"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env.update(XDG_RUNTIME_DIR=str(root / "run"), XDG_STATE_HOME=str(root / "state"))
    args = [sys.executable, "-m", "cli", "serve", "--workspace", str(root / "ws")]
    args += ["--socket", str(sock), "--provider", "scripted", "--name", "api"]
    process = subprocess.Popen(args, env=env, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stderr is not None
        # It says so once it listens (event-driven: no sleep, no deadline of ours).
        line = process.stderr.readline()
        while line and "listening on" not in line:
            line = process.stderr.readline()
        assert "listening on" in line, "the pod did not start"
        yield root, sock
    finally:
        process.terminate()
        process.wait(timeout=60)
        shutil.rmtree(root, ignore_errors=True)


def test_pod_chat_on_a_socket(served: tuple[Path, Path]) -> None:
    root, sock = served
    command = (
        f"env -u ANTHROPIC_API_KEY XDG_RUNTIME_DIR={shlex.quote(str(root / 'run'))} "
        f"{shlex.quote(sys.executable)} -m cli chat --socket {shlex.quote(str(sock))}; "
        "echo UI-EXITED-$?; sleep 60"
    )
    tmux = Tmux(f"podcs{os.getpid()}")
    try:
        tmux.attach(command)
        tmux.wait(lambda s: "Idle" in status_line(s), "the UI attached to the pod", timeout=60)
        tmux.type("hello there")
        tmux.keys("Enter")
        tmux.wait(lambda s: "You said: hello there" in " ".join(s.split()), "the answer", 60)
        tmux.wait(lambda s: "Idle" in status_line(s), "the turn's end", timeout=60)
        items = ask(sock, "get_history")["items"]
        assert isinstance(items, list)
        assert [i["kind"] for i in items if i["kind"] == "user_message"] == ["user_message"]
        # Leaving says how to come back: the same command, not `pod attach NAME` (a gateway
        # socket is not in this user's runtime dir).
        tmux.keys("C-c")
        tmux.wait(lambda s: "Press Ctrl-C again to quit" in s, "the quit warning")
        tmux.keys("C-c")
        screen = tmux.wait(lambda s: "UI-EXITED-0" in s, "the UI to exit", timeout=60)
        assert f"pod chat --socket {sock})" in "".join(screen.splitlines())  # wrapped at 80
        assert ask(sock, "get_status")["status"] == "idle"
    finally:
        tmux.kill()
