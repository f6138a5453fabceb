"""``pod diagram`` through typer's CliRunner."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.diagrams import MISSING_DOT_MESSAGE, DiagramError, render_diagram
from cli.main import app

runner = CliRunner()


def test_default_is_mermaid_on_stdout() -> None:
    result = runner.invoke(app, ["diagram"])
    assert result.exit_code == 0, result.output
    assert result.stdout == render_diagram("mermaid")


@pytest.mark.parametrize("fmt", ["dot", "md", "mermaid"])
def test_text_formats_to_a_file(fmt: str, tmp_path: Path) -> None:
    out = tmp_path / f"d.{fmt}"
    result = runner.invoke(app, ["diagram", "--format", fmt, "--out", str(out)])
    assert (result.exit_code, result.stdout) == (0, "")
    assert out.read_text(encoding="utf-8") == render_diagram(fmt)  # type: ignore[arg-type]


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed")
def test_png_to_a_file_and_to_stdout(tmp_path: Path) -> None:
    out = tmp_path / "d.png"
    result = runner.invoke(app, ["diagram", "-f", "png", "-o", str(out)])
    assert result.exit_code == 0
    assert out.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    piped = runner.invoke(app, ["diagram", "-f", "png"])
    assert piped.exit_code == 0
    assert piped.stdout_bytes.startswith(b"\x89PNG\r\n\x1a\n")


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed")
def test_svg_to_stdout() -> None:
    result = runner.invoke(app, ["diagram", "--format", "svg"])
    assert result.exit_code == 0
    assert "<svg" in result.stdout and "Paused" in result.stdout


@pytest.mark.parametrize("fmt", ["svg", "png"])
def test_missing_dot_says_how_to_install(
    fmt: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(DiagramError) as info:
        render_diagram(fmt)  # type: ignore[arg-type]
    assert str(info.value) == MISSING_DOT_MESSAGE
    assert MISSING_DOT_MESSAGE == (
        "Graphviz's `dot` program is not installed (it is needed for svg and png). "
        "Install it with `apt-get install graphviz` (Debian/Ubuntu) or `brew install graphviz` "
        "(macOS). The mermaid, dot and md formats work without it."
    )
    result = runner.invoke(app, ["diagram", "--format", fmt])
    assert result.exit_code == 1
    assert isinstance(result.exception, Exception)
    assert str(result.exception) == MISSING_DOT_MESSAGE


def test_missing_dot_through_main_prints_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from cli import main as cli_main

    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr("sys.argv", ["pod", "diagram", "--format", "svg"])
    with pytest.raises(SystemExit) as info:
        cli_main.main()
    assert info.value.code == 1
    assert capsys.readouterr().err == f"pod: error: {MISSING_DOT_MESSAGE}\n"


def test_text_formats_work_without_dot(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    result = runner.invoke(app, ["diagram", "--format", "dot"])
    assert result.exit_code == 0
    assert result.stdout.startswith("digraph PodLifecycle {")


def test_unwritable_out_is_a_cli_error(tmp_path: Path) -> None:
    result = runner.invoke(app, ["diagram", "--out", str(tmp_path / "missing" / "d.mmd")])
    assert result.exit_code == 1
    assert str(result.exception).startswith(f"cannot write {tmp_path / 'missing' / 'd.mmd'}:")


def test_unknown_format_is_a_usage_error() -> None:
    result = runner.invoke(app, ["diagram", "--format", "gif"])
    assert result.exit_code == 2
