"""``pod run`` and an MCP server's request for input: asked field by field on a terminal,
declined without one.

The pod is a real one that ``pod run`` starts, on a script whose model calls the asking
server's ``ask_token`` (a required ``token`` with no default, an optional ``remember``).
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from cli.elicitation_prompt import describe, field_header, field_prompt, parse_choice
from orchestrator.adapters.mcp.forms import form_fields
from tests.mcp.asking_server import config

SCHEMA = {
    "type": "object",
    "properties": {
        "token": {"type": "string", "description": "A secret only a person knows"},
        "remember": {"type": "boolean", "default": False},
        "size": {"type": "string", "enum": ["s", "m"], "enumNames": ["Small", "Medium"]},
        "count": {"type": "integer", "minimum": 1, "maximum": 9},
    },
    "required": ["token"],
}


@pytest.mark.parametrize(
    ("line", "mode", "expected"),
    [
        ("f\n", "form", "fill"),
        (" Decline ", "form", "decline"),
        ("c", "url", "cancel"),
        ("o", "url", "accept"),
        ("o", "form", None),  # a form is accepted by filling it in
        ("f", "url", None),
        ("", "form", None),
    ],
)
def test_the_first_line_fills_in_declines_or_cancels(
    line: str, mode: str, expected: str | None
) -> None:
    assert parse_choice(line, mode) == expected


def test_each_field_says_what_it_takes_and_what_enter_keeps() -> None:
    token, remember, size, count = form_fields(SCHEMA).fields
    assert field_header(token) == "  token: A secret only a person knows\n"
    assert field_prompt(token) == "  token (text, required): "
    assert field_prompt(remember) == "  remember (yes/no, Enter: no): "
    assert field_header(size) == "    1 Small · 2 Medium\n"
    assert field_prompt(size) == "  size (one of: Small, Medium, Enter: leave out): "
    assert field_prompt(count) == "  count (integer 1–9, Enter: leave out): "


def test_the_request_names_the_server_the_call_and_a_url() -> None:
    asked = {"server": "a", "message": "Sign in", "mode": "url", "url": "https://x.test/"}
    assert describe({**asked, "tool": "mcp__a__login", "pod": "kid"}).splitlines() == [
        "? MCP server a (child kid) asks: Sign in",
        "  (during mcp__a__login)",
        "  open: https://x.test/",
    ]


def _configure(env: dict[str, str], tmp_path: Path) -> None:
    """Your config: the scripted model calls ``ask_token`` of server ``a``, then answers."""
    script = tmp_path / "script.json"
    replies = [
        {"tool_calls": [{"name": "mcp__a__ask_token", "input": {}}]},
        {"text": "Signed in."},
    ]
    script.write_text(json.dumps({"replies": replies}))
    server = config()
    folder = Path(env["XDG_CONFIG_HOME"]) / "pod"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.toml").write_text(
        f"scripted_script = {json.dumps(str(script))}\n"
        "[mcp.servers.a]\n"
        f"command = {json.dumps(server['command'])}\n"
        f"args = {json.dumps(server['args'])}\n"
        f"cwd = {json.dumps(server['cwd'])}\n"
        f"permission = {json.dumps(server['permission'])}\n"
    )


def _results(env: dict[str, str], workspace: Path) -> list[str]:
    shown = subprocess.run(
        [sys.executable, "-m", "cli", "history", "--workspace", str(workspace), "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return [i["content"] for i in json.loads(shown.stdout) if i["kind"] == "tool_result"]


def test_on_a_terminal_the_form_is_asked_field_by_field(
    env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    import pexpect

    _configure(env, tmp_path)
    child = pexpect.spawn(
        sys.executable,
        ["-m", "cli", "run", "sign me in", "--workspace", str(workspace)],
        env=env,
        encoding="utf-8",
        timeout=60,
    )
    child.logfile_read = seen = io.StringIO()
    child.expect_exact("[f]ill in, [d]ecline, [c]ancel: ")
    child.sendline("maybe")  # means nothing: asked again
    child.expect_exact("[f]ill in, [d]ecline, [c]ancel: ")
    child.sendline("f")
    child.expect_exact("Token: A secret only a person knows")
    child.expect_exact("Token (text, required): ")
    child.sendline("")  # required, no default: asked again, saying why
    child.expect_exact("✗ field 'token' is required")
    child.expect_exact("Token (text, required): ")
    # While it waits, `pod status` says so (orchestrator/runtime/status.py).
    shown = subprocess.run(
        [sys.executable, "-m", "cli", "status", "--workspace", str(workspace)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "1 request(s) for input waiting: MCP server a (input_" in shown.stdout, shown
    child.sendline("s3cret")
    child.expect_exact("Remember (yes/no, Enter: no): ")
    child.sendline("perhaps")
    child.expect_exact("✗ field 'remember' takes yes or no")
    child.sendline("y")
    child.expect(pexpect.EOF)
    child.close()
    out = seen.getvalue()
    assert child.exitstatus == 0, out
    assert "? MCP server a asks: Your token, please" in out
    assert "(during mcp__a__ask_token)" in out
    assert "Signed in." in out
    assert _results(env, workspace) == ["accept {'token': 's3cret', 'remember': True}"]


def test_without_a_terminal_the_request_is_declined(
    env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    _configure(env, tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "cli", "run", "sign me in", "--workspace", str(workspace)],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert done.returncode == 0, done.stderr
    assert "? MCP server a asks: Your token, please" in done.stderr
    assert "✗ declined: pod run is not interactive" in done.stderr
    assert "Signed in." in done.stdout
    assert _results(env, workspace) == ["decline"]


def test_ctrl_c_in_the_form_withdraws_the_request_and_pauses(
    env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    import pexpect

    _configure(env, tmp_path)
    child = pexpect.spawn(
        sys.executable,
        ["-m", "cli", "run", "sign me in", "--workspace", str(workspace)],
        env=env,
        encoding="utf-8",
        timeout=60,
    )
    child.logfile_read = seen = io.StringIO()
    child.expect_exact("[f]ill in, [d]ecline, [c]ancel: ")
    child.sendline("f")
    child.expect_exact("Token (text, required): ")
    child.sendintr()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 3, seen.getvalue()
    assert "(withdrawn)" in seen.getvalue()
    shown = subprocess.run(
        [sys.executable, "-m", "cli", "status", "--workspace", str(workspace), "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    status = json.loads(shown.stdout)
    assert (status["status"], status["elicitations"]) == ("paused", [])
