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
    for option in ("--workspace", "--new", "--session", "--model", "--provider", "--allow-bash"):
        assert option in chat_help.output
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


async def test_start_up_notices_are_drawn_once_the_conversation_is(
    workspace: Path, short_dir: Path
) -> None:
    from cli.tui.app import PodApp
    from tests.cli.tui.conftest import SIZE, connector, wait_until
    from tests.e2e.harness import running_pod

    notice = "pod ws was already running, so --model does not apply"
    async with running_pod(workspace, short_dir) as pod:
        app = PodApp(connector(pod.socket), notices=[notice])
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: app.attached, what="attach")
            assert app.model.transcript()[-1] == f"info: {notice}"
            assert app.notice.plain == notice


def test_chat_takes_a_socket_like_attach(app: typer.Typer, short_dir: Path) -> None:
    assert "--socket" in CliRunner().invoke(app, ["chat", "--help"]).output
    dead = str(short_dir / "none.sock")
    result = CliRunner().invoke(app, ["chat", "--socket", dead])
    assert isinstance(result.exception, CliError)
    assert "no pod is listening" in str(result.exception)  # not "no such option"


def test_chat_on_a_socket_refuses_what_only_a_starting_pod_takes(
    app: typer.Typer, short_dir: Path
) -> None:
    for extra in (["--model", "m"], ["--new"], ["--provider", "scripted"], ["--no-host"]):
        result = CliRunner().invoke(app, ["chat", "--socket", str(short_dir / "a.sock"), *extra])
        assert isinstance(result.exception, CliError), extra
        assert "only apply to a pod `pod chat` starts" in str(result.exception)
