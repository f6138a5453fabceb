"""``pod knowledge lint`` through typer's runner, on real workspaces."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner, Result

from cli.commands import knowledge
from cli.errors import CliError

# Wide enough that rich does not wrap table cells.
RUNNER = CliRunner(env={"COLUMNS": "200"})


def make_app() -> typer.Typer:
    app = typer.Typer()

    # A callback keeps ``knowledge`` a subcommand even when it is the only one.
    @app.callback()
    def root() -> None:
        """Test app."""

    knowledge.register(app)
    return app


def lint(*args: str) -> Result:
    return RUNNER.invoke(make_app(), ["knowledge", "lint", *args])


def write(root: Path, name: str, text: str) -> None:
    path = root / "knowledge" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


GOOD = "---\ndescription: Fine.\nmodel_invokation: true\n---\nBody.\n"


def test_clean_records_exit_zero(tmp_path: Path) -> None:
    write(tmp_path, "a.md", GOOD)
    write(tmp_path, "b.md", GOOD)

    result = lint("--workspace", str(tmp_path))

    assert result.exit_code == 0
    assert result.output == f"2 files in {tmp_path.resolve()}/knowledge: no issues\n"


def test_errors_exit_one_and_show_a_table(tmp_path: Path) -> None:
    write(tmp_path, "a.md", GOOD)
    write(tmp_path, "bad.md", "---\ntitle: T\nmodel_invokation: maybe\n---\n")

    result = lint("-w", str(tmp_path))

    assert result.exit_code == 1
    assert "knowledge/bad.md" in result.output
    assert "description is required" in result.output
    assert "model_invokation must be true or false, got str 'maybe'" in result.output
    assert result.output.endswith(
        f"2 files in {tmp_path.resolve()}/knowledge: 2 error(s), 0 warning(s)\n"
    )


def test_warnings_alone_exit_zero(tmp_path: Path) -> None:
    write(tmp_path, "a.md", "---\ndescription: D\nmodel_invocation: true\n---\n")

    result = lint("-w", str(tmp_path))

    assert result.exit_code == 0
    assert "did you mean 'model_invokation'?" in result.output
    assert "0 error(s), 1 warning(s)" in result.output


def test_json_report(tmp_path: Path) -> None:
    write(tmp_path, "ok.md", GOOD)
    write(tmp_path, "Bad.md", "---\ndescription: ''\n---\n")

    result = lint("-w", str(tmp_path), "--json")

    assert result.exit_code == 1
    assert json.loads(result.output) == {
        "root": str(tmp_path.resolve()),
        "files": 2,
        "errors": 2,
        "warnings": 0,
        "issues": [
            {
                "path": "knowledge/Bad.md",
                "line": None,
                "severity": "error",
                "message": "slug 'Bad' is invalid: use lowercase letters, digits, '-' and '_', "
                "starting with a letter or digit",
            },
            {
                "path": "knowledge/Bad.md",
                "line": 2,
                "severity": "error",
                "message": "description is empty",
            },
        ],
    }


def test_no_knowledge_folder_is_one_clear_line(tmp_path: Path) -> None:
    result = lint("-w", str(tmp_path))

    assert result.exit_code == 0
    assert result.output == f"No knowledge/ folder in {tmp_path.resolve()}: nothing to lint.\n"


def test_no_knowledge_folder_json(tmp_path: Path) -> None:
    result = lint("-w", str(tmp_path), "--json")

    assert result.exit_code == 0
    assert json.loads(result.output) == {"root": str(tmp_path.resolve()), "files": 0, "issues": []}


def test_memory_root_inside_the_workspace_comes_from_its_config(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / ".pod").mkdir(parents=True)
    (workspace / ".pod" / "config.toml").write_text(
        '[memory]\nworkspace_root = "notes"\n', encoding="utf-8"
    )
    write(workspace / "notes", "broken.md", "no frontmatter\n")

    result = lint("-w", str(workspace), "--json")

    assert result.exit_code == 1
    assert json.loads(result.output)["root"] == str((workspace / "notes").resolve())


def test_memory_root_outside_comes_only_from_the_user_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = tmp_path / "ws"
    memory = tmp_path / "memory"
    (workspace / ".pod").mkdir(parents=True)
    (workspace / ".pod" / "config.toml").write_text(
        f'[memory]\nworkspace_root = "{memory}"\n', encoding="utf-8"
    )
    write(memory, "broken.md", "no frontmatter\n")

    ignored = lint("-w", str(workspace), "--json")
    assert ignored.exit_code == 0
    assert json.loads(ignored.stdout)["root"] == str(workspace.resolve())
    assert "memory.workspace_root" in ignored.stderr and "ignored" in ignored.stderr

    user = tmp_path / "cfg"
    (user / "pod").mkdir(parents=True, exist_ok=True)
    (user / "pod" / "config.toml").write_text(f'[memory]\nworkspace_root = "{memory}"\n')
    monkeypatch.setenv("XDG_CONFIG_HOME", str(user))
    granted = lint("-w", str(workspace), "--json")
    assert granted.exit_code == 1
    assert json.loads(granted.stdout)["root"] == str(memory.resolve())


def test_bad_config_is_a_cli_error(tmp_path: Path) -> None:
    (tmp_path / ".pod").mkdir()
    (tmp_path / ".pod" / "config.toml").write_text("memory = 3\n", encoding="utf-8")

    result = lint("-w", str(tmp_path))

    assert isinstance(result.exception, CliError)
    assert "memory" in str(result.exception)


@pytest.mark.parametrize("args", [["knowledge", "--help"], ["knowledge", "lint", "--help"]])
def test_help(args: list[str]) -> None:
    result = RUNNER.invoke(make_app(), args)

    assert result.exit_code == 0
    assert "lint" in result.output
