"""What the model, a tool or an MCP server sends reaches the terminal as text, never as control
sequences: `pod run`'s answer, a command's live output and result, `pod history`, and the
approval prompt (issue 39, section 2)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cli.terminal_text import visible, visible_json
from tests.cli.helpers import scripted_pod

# Each an attack a terminal obeys when the bytes reach it as they are.
CLIPBOARD = "\x1b]52;c;b3duZWQ=\x07"  # OSC 52: writes the clipboard
TITLE = "\x1b]0;owned\x07"  # OSC 0: retitles the window
CLEAR = "\x1b[2J"  # clears the screen
LINK = "\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\"  # OSC 8: a hidden address
OVERWRITE = "safe\rEVIL"  # a carriage return: what follows overwrites what came before
CSI_8BIT = "\x9b2J"  # the one-byte CSI of C1
OSC_8BIT = "\x9d0;t\x9c"  # the one-byte OSC and ST of C1
OTHERS = "del\x7fbs\x08bell\x07rtl\u202eend"
ATTACKS = [CLIPBOARD, TITLE, CLEAR, LINK, OVERWRITE, CSI_8BIT, OSC_8BIT, OTHERS]

RAW = [b"\x1b", b"\x07", b"\r", b"\x08", b"\x7f", b"\xc2\x9b", b"\xc2\x9d", b"\xc2\x9c"]
"""The bytes of those controls as a UTF-8 terminal would receive them: never printed."""
RAW += ["\u202e".encode()]


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (CLIPBOARD, "\\x1b]52;c;b3duZWQ=\\x07"),
        (TITLE, "\\x1b]0;owned\\x07"),
        (CLEAR, "\\x1b[2J"),
        (LINK, "\\x1b]8;;https://evil.example\\x1b\\click\\x1b]8;;\\x1b\\"),
        (OVERWRITE, "safe\\x0dEVIL"),
        (CSI_8BIT, "\\x9b2J"),
        (OSC_8BIT, "\\x9d0;t\\x9c"),
        (OTHERS, "del\\x7fbs\\x08bell\\x07rtl\\u202eend"),
        ("nul\x00 vt\x0b ff\x0c", "nul\\x00 vt\\x0b ff\\x0c"),
        ("lone \udc9b surrogate", "lone \\udc9b surrogate"),
        # What stays: line breaks, tabs, and text in any script.
        ("a\tb\nc — é 日本 ✓", "a\tb\nc — é 日本 ✓"),
        ("windows\r\nline", "windows\nline"),
    ],
)
def test_control_characters_are_shown_escaped(text: str, shown: str) -> None:
    assert visible(text) == shown


def test_json_keeps_its_value_and_loses_its_controls() -> None:
    value = {"text": "".join(ATTACKS) + "é"}
    shown = visible_json(json.dumps(value, ensure_ascii=False))
    assert json.loads(shown) == value
    assert not any(raw in shown.encode() for raw in RAW)
    assert "é" in shown  # readable text stays readable


@pytest.fixture
def hostile(env: dict[str, str], workspace: Path) -> Iterator[Path]:
    """A pod whose model answers with every attack and runs a command printing them; yields
    its socket."""
    command = f"echo 'L{TITLE}M{CLEAR}'; printf 'N\\302\\233O\\rP\\033]52;c;eA==\\007Q\\n'"
    replies: list[dict[str, Any]] = [
        {
            "text": "|".join(ATTACKS),
            "chunk_size": 3,
            "tool_calls": [{"name": "bash", "input": {"command": command}}],
        },
        {"text": f"done{CLEAR}"},
    ]
    with scripted_pod(env, workspace, replies, "--allow-bash") as socket:
        yield socket


def _run_bytes(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "cli", *args], env=env, capture_output=True, timeout=120
    )


def _assert_no_raw(*outputs: bytes) -> None:
    for output in outputs:
        found = [raw for raw in RAW if raw in output]
        assert not found, (found, output)


def test_pod_run_and_history_show_escapes_instead_of_obeying_them(
    env: dict[str, str], hostile: Path
) -> None:
    run = _run_bytes(env, "run", "go", "--socket", str(hostile))
    assert run.returncode == 0, run.stderr
    _assert_no_raw(run.stdout, run.stderr)
    out, err = run.stdout.decode(), run.stderr.decode()
    # The answer, escaped: every attack visible where it was.
    assert "|".join(visible(attack) for attack in ATTACKS) in out
    assert "done\\x1b[2J" in out
    # The command's live output and its result line, escaped too.
    assert "LM" not in err and "L\\x1b]0;owned\\x07M\\x1b[2J" in err
    assert "N\\x9bO\\x0dP\\x1b]52;c;eA==\\x07Q" in err
    assert "✓ bash: echo 'L\\x1b]0;owned\\x07M\\x1b[2J'" in err

    shown = _run_bytes(env, "history", "--socket", str(hostile))
    assert shown.returncode == 0, shown.stderr
    _assert_no_raw(shown.stdout, shown.stderr)
    assert "\\x1b]52;c;b3duZWQ=\\x07" in shown.stdout.decode()
    assert "safe\\x0dEVIL" in shown.stdout.decode()

    as_json = _run_bytes(env, "history", "--socket", str(hostile), "--json")
    _assert_no_raw(as_json.stdout)
    [answer, *_] = [i for i in json.loads(as_json.stdout) if i["kind"] == "assistant"]
    assert answer["blocks"][0]["text"] == "|".join(ATTACKS)  # the value itself is intact


HIDDEN = "touch X # \x1b[2K\r\x1b[1A\x1b[2K ls -la"
"""A command whose escapes would show the person ` ls -la` where it asks."""


def test_an_approval_prompt_shows_the_whole_command_escaped(
    env: dict[str, str], workspace: Path
) -> None:
    import pexpect

    replies = [{"text": "", "tool_calls": [{"name": "bash", "input": {"command": HIDDEN}}]}]
    with scripted_pod(env, workspace, replies) as socket:
        child = pexpect.spawn(
            sys.executable,
            ["-m", "cli", "run", "go", "--socket", str(socket)],
            env=env,
            timeout=60,
        )
        seen = io.BytesIO()
        child.logfile_read = seen
        child.expect_exact(b"Allow? [y]es once, [a]lways this session, [n]o: ")
        asked = seen.getvalue()
        child.sendline(b"n")
        child.expect(pexpect.EOF)
        child.close()
    assert child.exitstatus == 0, seen.getvalue()
    # On a terminal, lines end in \r\n (the pty's doing); no other control byte was written.
    _assert_no_raw(asked.replace(b"\r\n", b"\n"))
    assert b"? bash: run: touch X # \\x1b[2K\\x0d\\x1b[1A\\x1b[2K ls -la" in asked
    assert not (workspace / "X").exists()
