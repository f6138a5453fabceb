"""The start options are declared once and reach each command that takes them as one value."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from typer.testing import CliRunner

from cli.start_options import (
    SETTINGS,
    WHEN_STARTED,
    PodSettings,
    StartOptions,
    options_into,
)


def _app(seen: list[object]) -> typer.Typer:
    app = typer.Typer()

    @app.command()
    @options_into("start", StartOptions, WHEN_STARTED)
    def go(
        first: Annotated[str, typer.Option(help="before")] = "a",
        start: StartOptions = StartOptions(),  # noqa: B008 (replaced by the options)
        last: Annotated[str, typer.Option(help="after")] = "z",
    ) -> None:
        seen.append((first, start, last))

    return app


def test_a_command_gets_its_start_options_as_one_value() -> None:
    seen: list[object] = []
    result = CliRunner().invoke(
        _app(seen),
        ["--new", "--model", "m1", "--no-allow-bash", "--thinking", "2048", "--last", "y"],
    )
    assert result.exit_code == 0, result.output
    assert seen == [
        ("a", StartOptions(new=True, model="m1", allow_bash=False, thinking="2048"), "y")
    ]


def test_the_options_stand_in_help_where_the_parameter_stands() -> None:
    result = CliRunner().invoke(_app([]), ["--help"], env={"COLUMNS": "200", "NO_COLOR": "1"})
    text = result.output
    order = ["--first", "--new", "--session", "--model", "--no-host", "--last"]
    assert [text.index(flag) for flag in order] == sorted(text.index(flag) for flag in order)
    assert "When a pod is started: low, medium, high, xhigh or max." in text


def test_a_bad_thinking_value_is_a_usage_error() -> None:
    result = CliRunner().invoke(_app([]), ["--thinking", "lots"])
    assert result.exit_code == 2


def test_the_settings_family_builds_pod_settings() -> None:
    seen: list[PodSettings] = []
    app = typer.Typer()

    @app.command()
    @options_into("settings", PodSettings, SETTINGS)
    def add(settings: PodSettings = PodSettings()) -> None:  # noqa: B008
        seen.append(settings)

    result = CliRunner().invoke(app, ["--sandbox", "on", "--effort", "high"])
    assert result.exit_code == 0, result.output
    assert seen == [PodSettings(sandbox="on", effort="high")]
    assert seen[0].overrides()["sandbox"] == {"mode": "on"}


def test_serve_args_say_what_was_chosen(tmp_path: Path) -> None:
    session = tmp_path / "s.jsonl"
    options = StartOptions(model="m", allow_bash=True, permission_mode="yolo")
    assert options.serve_args(None) == [
        "--continue", "--model", "m", "--allow-bash", "--permission-mode", "yolo",
    ]  # fmt: skip
    assert StartOptions(new=True).serve_args(session) == ["--session", str(session.resolve())]
    assert StartOptions(new=True, effort="low").choices_given() == ["--effort", "--new"]
    assert StartOptions().choices_given() == []
