"""The real ``pod chat`` in a pseudo-terminal (tmux) on a session whose answer searched the
web: the search's card, the answer's ``[1][2]`` and its numbered sources are drawn, and a
result's hostile title (it writes the clipboard and the window title, carries markup, runs
to 10,000 characters) is shown as its escapes, never obeyed: tmux, told to take the
clipboard from applications, holds no buffer afterwards, and the pane keeps its title."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.tui.test_chat_pty import REPO, Tmux, dirs, flat, pytestmark, status_line
from tests.cli.web_session import write_web_session

__all__ = ["dirs", "pytestmark"]  # the fixture and the tmux skip, shared with test_chat_pty


def test_a_search_and_its_citations_in_a_terminal(
    dirs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, sock = dirs
    workspace = root / "ws"
    monkeypatch.setenv("XDG_STATE_HOME", str(root / "state"))
    write_web_session(workspace)
    go = root / "go"
    command = (
        f"while [ ! -e {shlex.quote(str(go))} ]; do sleep 0.1; done; "
        "env -u ANTHROPIC_API_KEY -u ANTHROPIC_BASE_URL POD_NO_HOST=1 "
        f"XDG_RUNTIME_DIR={shlex.quote(str(root / 'run'))} "
        f"XDG_STATE_HOME={shlex.quote(str(root / 'state'))} "
        f"{shlex.quote(sys.executable)} -m cli chat --provider scripted "
        f"--workspace {shlex.quote(str(workspace))} --session web-answer; sleep 60"
    )
    tmux = Tmux(f"podweb{os.getpid()}")
    try:
        tmux.attach(command)
        # Applications may set the clipboard (OSC 52) and the title: an attack would land.
        tmux("set-option", "-g", "set-clipboard", "on")
        tmux("set-option", "-g", "allow-rename", "on")
        go.touch()
        screen = tmux.wait(
            lambda s: "Idle" in status_line(s) and "Sources:" in s, "the replayed answer", 60
        )
        text = flat(screen)
        assert "asyncio writes concurrent code [1][2]." in text
        assert (
            "[1] asyncio — Asynchronous I/O — https://docs.python.org/3/library/asyncio.html"
            in text
        )
        assert "[2] \\x1b]52;c;ZXZpbA==\\x07\\x1b]0;PWNED\\x07[bold red]Owned[/] AAAA" in text
        assert "javascript:alert(document.cookie) (not a web link)" in text
        # The card: the query, then the results (the title cut to the terminal's width).
        (card,) = [row for row in screen.splitlines() if "⌕ search" in row]
        assert '⌕ search: "python' in card and "→ 2 results: asyncio" in card, screen
        assert tmux("list-buffers") == ""  # nothing reached the clipboard
        assert "PWNED" not in tmux("display-message", "-p", "#{pane_title}")
    finally:
        tmux.kill()
        if sock.exists():
            subprocess.run(
                [sys.executable, "-m", "cli", "shutdown", "--socket", str(sock)],
                cwd=REPO,
                capture_output=True,
                timeout=20,
                check=False,
            )
