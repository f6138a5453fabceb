"""The TUI's ``/fork`` hint, run as a person would while the original pod keeps running: the
real ``pod chat`` in a pseudo-terminal (tmux), then the printed command in a second one."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

from tests.cli.tui.test_chat_pty import REPO, Tmux, ask, dirs, flat, pytestmark, status_line

__all__ = ["dirs", "pytestmark"]  # the fixture and the tmux skip, shared with test_chat_pty


def _pod(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cli", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_fork_hint_continues_the_fork_beside_the_running_pod(
    dirs: tuple[Path, Path],
) -> None:
    root, sock = dirs
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env.pop("POD_NO_HOST", None)
    env.update(XDG_RUNTIME_DIR=str(root / "run"), XDG_STATE_HOME=str(root / "state"))
    # The panes run in the workspace, as a person does: this checkout's CLI by PYTHONPATH.
    prefix = (
        "env -u ANTHROPIC_API_KEY -u ANTHROPIC_BASE_URL -u POD_NO_HOST "
        f"PYTHONPATH={shlex.quote(str(REPO))} "
        f"XDG_RUNTIME_DIR={shlex.quote(env['XDG_RUNTIME_DIR'])} "
        f"XDG_STATE_HOME={shlex.quote(env['XDG_STATE_HOME'])} "
        f"{shlex.quote(sys.executable)} -m cli"
    )
    workspace = root / "ws"
    done = _pod(env, "run", "remember the word tangerine", "--workspace", str(workspace))
    assert done.returncode == 0, done.stderr
    original = Path(str(ask(sock, "get_status")["session"])).stem

    first = Tmux(f"podfork{os.getpid()}")
    second = Tmux(f"podfork{os.getpid()}b")
    try:
        first("new-session", "-d", "-s", "chat", "-x", "80", "-y", "24", "-c", str(workspace),
              f"{prefix} chat --workspace {shlex.quote(str(workspace))}; sleep 60")  # fmt: skip
        first.wait(lambda s: "Idle" in status_line(s), "the UI on the running pod", timeout=60)
        first.type("/fork try B")
        first.keys("Enter")
        screen = first.wait(lambda s: "Continue it with:" in s, "the fork's hint", timeout=60)
        # The hint wraps at 80 columns (between words: its paths here are short); the
        # editor's border follows it.
        hint = flat(screen).split("Continue it with: ", 1)[1].split(" ▊", 1)[0]
        assert hint.startswith("pod chat "), screen

        # The hint, run as printed (`pod` is this checkout's CLI), while the first pod runs.
        command = prefix + hint.removeprefix("pod")
        second("new-session", "-d", "-s", "chat", "-x", "80", "-y", "24", "-c", str(workspace),
               f"{command}; echo UI-EXITED-$?; sleep 60")  # fmt: skip
        screen = second.wait(
            lambda s: "UI-EXITED" in s or "Idle" in status_line(s),
            "the hint's UI (or its exit)",
            timeout=60,
        )
        assert "UI-EXITED" not in screen, f"{hint!r} failed:\n{screen}"
        second.wait(lambda s: "remember the word tangerine" in flat(s), "the fork's conversation")
        fork = hint.split("--session ", 1)[1].split()[0]
        name = hint.split("--name ", 1)[1].split()[0]
        beside = root / "run" / "pod" / f"{name}.sock"
        assert Path(str(ask(beside, "get_status")["session"])).stem == fork != original
        # The first pod goes on, on its own session.
        assert Path(str(ask(sock, "get_status")["session"])).stem == original
    finally:
        first.kill()
        second.kill()
        for info in (root / "run" / "pod").glob("*.json"):  # every pod the test started
            _pod(env, "shutdown", "--socket", str(info.with_suffix(".sock")))
        deadline = time.monotonic() + 60  # a ceiling for a loaded machine
        host = root / "run" / "pod" / "host.sock"
        while (host.exists() or sock.exists()) and time.monotonic() < deadline:
            time.sleep(0.05)
    assert not host.exists(), "the pod host did not leave with its last pod"
