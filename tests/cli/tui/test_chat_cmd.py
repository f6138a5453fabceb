"""``pod chat`` / ``pod attach`` registration and their failures before any UI starts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from cli.commands import chat
from cli.errors import CliError


@pytest.fixture
def app() -> typer.Typer:
    app = typer.Typer()
    chat.register(app)
    return app


def test_commands_and_options(app: typer.Typer) -> None:
    runner = CliRunner()
    chat_help = runner.invoke(app, ["chat", "--help"])
    assert chat_help.exit_code == 0
    assert "--workspace" in chat_help.output and "--continue" in chat_help.output
    attach_help = runner.invoke(app, ["attach", "--help"])
    assert attach_help.exit_code == 0
    assert "--socket" in attach_help.output


def test_attach_to_a_dead_socket_fails_without_starting_the_ui(
    app: typer.Typer, short_dir: Path
) -> None:
    result = CliRunner().invoke(app, ["attach", "--socket", str(short_dir / "none.sock")])
    assert isinstance(result.exception, CliError)
    assert "no pod is listening" in str(result.exception)


def test_chat_needs_a_directory(app: typer.Typer, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["chat", "--workspace", str(tmp_path / "missing")])
    assert isinstance(result.exception, CliError)


def test_registering_does_not_import_textual() -> None:
    code = (
        "import sys, typer; from cli.commands import chat; chat.register(typer.Typer()); "
        "print('textual' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
