"""A command whose converters are deferred (cli/deferred_coercion.py) takes every value, and
refuses every bad one, exactly as Typer's own command does: the same function under a plain
Typer command and under ours gets the same arguments and prints the same errors. (It has no
positional argument: ours writes those in capitals on the usage line, which errors repeat.)"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import pytest
import typer
from typer.core import TyperCommand
from typer.testing import CliRunner

from cli.options import PodCommand


def _app(command_class: type[TyperCommand], seen: list[dict[str, Any]]) -> typer.Typer:
    app = typer.Typer(add_completion=False)

    @app.command(cls=command_class)
    def probe(
        prompt: Annotated[str | None, typer.Option()] = None,
        count: Annotated[int | None, typer.Option()] = None,
        names: Annotated[list[str] | None, typer.Option("--name")] = None,
        timeout: Annotated[float, typer.Option(min=0)] = 1.5,
        where: Annotated[Path, typer.Option()] = Path("."),
        json_out: Annotated[bool, typer.Option("--json")] = False,
    ) -> None:
        seen.append(
            {
                "prompt": prompt,
                "count": count,
                "names": names,
                "timeout": timeout,
                "where": where,
                "json": json_out,
            }
        )

    @app.command("other")
    def other() -> None:  # a second command, so `probe` is a sub-command as ours are
        """Nothing."""

    return app


ARGVS = [
    ["probe"],
    ["probe", "--prompt", "hello"],
    ["probe", "--prompt", "hi", "--count", "3", "--name", "a", "--name", "b"],
    ["probe", "--timeout", "2", "--where", "/tmp", "--json"],
    ["probe", "--count", "three"],
    ["probe", "--timeout", "-1"],
    ["probe", "--timeout", "soon"],
    ["probe", "--count"],
]


@pytest.mark.parametrize("argv", ARGVS, ids=[" ".join(a) for a in ARGVS])
def test_our_command_converts_as_typers_does(argv: list[str]) -> None:
    runner = CliRunner()
    results = []
    for command_class in (TyperCommand, PodCommand):
        seen: list[dict[str, Any]] = []
        done = runner.invoke(_app(command_class, seen), argv, env={"COLUMNS": "100"})
        results.append((done.exit_code, done.output, seen))
    typers, ours = results
    assert ours == typers
    # The cases reach both outcomes: some run the command, the others are refused.
    assert (typers[0] == 0) == bool(typers[2])


def test_a_value_given_twice_to_one_command_object_converts_each_time() -> None:
    # The converter built for the first value serves the later ones (the same command object
    # is invoked twice, as a test runner or a shell's completion would).
    seen: list[dict[str, Any]] = []
    app = _app(PodCommand, seen)
    runner = CliRunner()
    first = runner.invoke(app, ["probe", "--count", "1"])
    second = runner.invoke(app, ["probe", "--count", "2"])
    bad = runner.invoke(app, ["probe", "--count", "x"])
    assert (first.exit_code, second.exit_code) == (0, 0)
    assert [s["count"] for s in seen] == [1, 2]
    assert bad.exit_code == 2
