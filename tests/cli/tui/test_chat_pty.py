"""The real ``pod chat`` in a pseudo-terminal (tmux): attach a file, /help, pause mid-stream,
resume, recall a prompt.

It starts a background pod through ``ensure_pod`` exactly as a person would, so it also checks
that the pod outlives the UI and can be shut down afterwards.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")


class Tmux:
    """One private tmux server holding one pane."""

    def __init__(self, name: str) -> None:
        self.args = ["tmux", "-L", name, "-f", "/dev/null"]

    def __call__(self, *args: str) -> str:
        done = subprocess.run([*self.args, *args], capture_output=True, text=True, check=True)
        return done.stdout

    def attach(self, command: str) -> None:
        """Run ``command`` in a new 80x24 pane."""
        self("new-session", "-d", "-s", "chat", "-x", "80", "-y", "24", "-c", str(REPO), command)

    def screen(self) -> str:
        return self("capture-pane", "-p", "-t", "chat")

    def keys(self, *keys: str) -> None:
        self("send-keys", "-t", "chat", *keys)

    def type(self, text: str) -> None:
        self("send-keys", "-t", "chat", "-l", text)

    def wait(self, predicate: Callable[[str], bool], what: str, timeout: float = 15.0) -> str:
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if predicate(screen):
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; screen:\n{screen}")
            time.sleep(0.05)

    def kill(self) -> None:
        subprocess.run([*self.args, "kill-server"], capture_output=True, check=False)


def status_line(screen: str) -> str:
    """The last two non-empty rows: the status line (it may wrap)."""
    rows = [r for r in screen.splitlines() if r.strip()]
    return " ".join(rows[-2:])


def flat(screen: str) -> str:
    """The screen as one line of words, so wrapped phrases still match."""
    return " ".join(screen.split())


def ask(sock: Path, method: str) -> dict[str, object]:
    """One request on the pod's socket, the way any client would send it."""
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(5)
        s.connect(str(sock))
        s.sendall(json.dumps({"method": method, "id": 1}).encode() + b"\n")
        buf = b""
        while True:
            buf += s.recv(1 << 16)
            for line in buf.split(b"\n")[:-1]:
                event = json.loads(line)
                if event["data"].get("id") == 1:
                    return dict(event["data"])


@pytest.fixture
def dirs() -> Iterator[tuple[Path, Path]]:
    root = Path(tempfile.mkdtemp(prefix="pod-pty"))
    (root / "run").mkdir()
    (root / "state").mkdir()
    (root / "ws").mkdir()
    (root / "ws" / "README.md").write_text("# Demo\n\nA tiny project.\n")
    try:
        yield root, root / "run" / "pod" / "ws.sock"
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_pod_chat_in_a_terminal(dirs: tuple[Path, Path]) -> None:
    root, sock = dirs
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env.update(XDG_RUNTIME_DIR=str(root / "run"), XDG_STATE_HOME=str(root / "state"))
    # The pane's shell gets the environment on its command line: a tmux server started
    # elsewhere would not pass ours through.
    command = (
        # As a person runs it: the pod loads into a `pod host` started for it.
        f"env -u ANTHROPIC_API_KEY -u ANTHROPIC_BASE_URL -u POD_NO_HOST "
        f"XDG_RUNTIME_DIR={shlex.quote(env['XDG_RUNTIME_DIR'])} "
        f"XDG_STATE_HOME={shlex.quote(env['XDG_STATE_HOME'])} "
        f"{shlex.quote(sys.executable)} -m cli chat --workspace {shlex.quote(str(root / 'ws'))}; "
        "echo UI-EXITED-$?; sleep 60"
    )
    tmux = Tmux(f"podtest{os.getpid()}")
    again = Tmux(f"podtest{os.getpid()}b")
    try:
        tmux.attach(command)
        tmux.wait(lambda s: "Idle" in status_line(s), "the UI attached to a fresh pod")
        assert "offline (scripted provider)" in tmux.screen()
        assert (root / "run" / "pod" / "host.sock").exists()  # the pod runs in a host

        # An @file reference through the completion list.
        tmux.type("summarize @READ")
        tmux.wait(
            lambda s: any(row.strip() == "README.md" for row in s.splitlines()),
            "the README.md candidate",
        )
        tmux.keys("Tab")
        tmux.wait(lambda s: "⟦@README.md⟧" in s, "the file chip")
        tmux.type("please")
        tmux.keys("Enter")
        tmux.wait(lambda s: "You attached:" in s and "Idle" in status_line(s), "the first turn")

        # The demo streams at a model's pace: a plain prompt can be paused with Ctrl-C
        # mid-stream and resumed with Enter.
        tmux.type("tell me more")
        tmux.keys("Enter")
        tmux.wait(lambda s: "Running" in status_line(s), "the turn to stream")
        tmux.wait(lambda s: s.count("I am the offline") >= 2, "streamed text")
        tmux.keys("C-c")
        screen = tmux.wait(lambda s: "Paused" in status_line(s), "Paused")
        assert "Enter to resume, type to start new turn" in flat(screen)
        # On one row of the 80-column terminal: the status line no longer wraps.
        (state_row,) = [row for row in screen.splitlines() if "Paused —" in row]
        assert "Paused — Enter to resume, type to start new turn" in state_row
        assert ask(sock, "get_status")["status"] == "paused"
        tmux.keys("Enter")
        screen = tmux.wait(
            lambda s: "Idle" in status_line(s) and "Ctrl-X cancels." in flat(s),
            "the finished turn",
        )
        items = ask(sock, "get_history")["items"]
        assert isinstance(items, list)
        kinds = [i["kind"] for i in items]
        assert kinds == [
            "user_message",
            "system_message",
            "assistant",
            "user_message",
            "assistant",
        ], f"{items}\n{screen}"
        assert {"kind": "file_ref", "path": "README.md"} in items[0]["segments"]

        # /help is answered by the UI itself: nothing reaches the pod's history.
        tmux.type("/help")
        tmux.keys("Enter")
        tmux.wait(lambda s: "/attach" in s and "Start a message with //" in flat(s), "the help")
        assert len(ask(sock, "get_history")["items"]) == len(items)  # type: ignore[arg-type]

        # Up brings the last prompt back into the editor (drawn between its borders).
        tmux.keys("Up")
        tmux.wait(lambda s: "▊ tell me more" in s, "the recalled prompt")

        # Ctrl-C twice leaves the UI; the pod keeps running until it is shut down.
        tmux.keys("C-c")
        tmux.wait(lambda s: "Press Ctrl-C again to quit" in s, "the quit warning")
        tmux.keys("C-c")
        screen = tmux.wait(lambda s: "UI-EXITED-0" in s, "the UI to exit")
        assert "pod ws keeps running" in screen
        assert ask(sock, "get_status")["status"] == "idle"

        # A second `pod chat` cannot apply --model to the pod that runs: the UI says so.
        again.attach(command.replace(" chat ", " chat --model claude-other "))
        # Waited for, not read off the first screen that says Idle: that screen can be caught
        # before the rest of the attach is painted (about one run in four, before the split too).
        again.wait(
            lambda s: (
                "Idle" in status_line(s)
                and "was already running, so --model does not apply" in flat(s)
            ),
            "the second UI, saying --model does not apply",
        )
        # The same conversation, replayed (the view follows its end once it is drawn).
        again.wait(lambda s: "You said: tell me more" in flat(s), "the replayed conversation")
    finally:
        tmux.kill()
        again.kill()
        if sock.exists():
            done = subprocess.run(
                [sys.executable, "-m", "cli", "shutdown", "--socket", str(sock)],
                cwd=REPO,
                env=env,
                capture_output=True,
                text=True,
                timeout=20,
                check=False,
            )
            assert done.returncode == 0, done.stderr
    deadline = time.monotonic() + 10
    while sock.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not sock.exists(), "the background pod did not shut down"
    host = root / "run" / "pod" / "host.sock"
    while host.exists() and time.monotonic() < deadline + 10:
        time.sleep(0.05)
    assert not host.exists(), "the pod host did not leave with its last pod"


def test_leaving_the_ui_after_the_pod_died_says_it_is_not_running(
    dirs: tuple[Path, Path],
) -> None:
    root, _ = dirs
    command = (
        # A pod process of its own, so that killing it kills only the pod.
        f"env -u ANTHROPIC_API_KEY -u ANTHROPIC_BASE_URL POD_NO_HOST=1 "
        f"XDG_RUNTIME_DIR={shlex.quote(str(root / 'run'))} "
        f"XDG_STATE_HOME={shlex.quote(str(root / 'state'))} "
        f"{shlex.quote(sys.executable)} -m cli chat --workspace {shlex.quote(str(root / 'ws'))}; "
        "echo UI-EXITED-$?; sleep 60"
    )
    tmux = Tmux(f"podtest{os.getpid()}d")
    try:
        tmux.attach(command)
        tmux.wait(lambda s: "Idle" in status_line(s), "the UI attached to a fresh pod")
        info = json.loads((root / "run" / "pod" / "ws.json").read_text())
        os.kill(int(info["pid"]), 9)
        tmux.wait(lambda s: "Disconnected" in status_line(s), "the UI to see the pod gone")
        tmux.keys("C-c")
        screen = flat(tmux.wait(lambda s: "UI-EXITED-0" in s, "the UI to exit"))
        assert "keeps running" not in screen
        assert "left the UI; pod ws is not running (it stopped or its process ended)" in screen
    finally:
        tmux.kill()
