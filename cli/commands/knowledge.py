"""``pod knowledge lint``: check ``knowledge/*.md`` records before a pod reads them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from cli.options import workspace_config, workspace_option


def lint(
    workspace: Annotated[
        Path,
        workspace_option(
            "The pod workspace; its config decides the memory root.", "--workspace", "-w"
        ),
    ] = Path("."),
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the issues as JSON instead of a table.")
    ] = False,
) -> None:
    """Check every record's frontmatter and slug; exit 1 when any error is found."""
    from rich.console import Console
    from rich.table import Table

    from orchestrator.capabilities.knowledge import (
        knowledge_dir,
        lint_knowledge,
        memory_fs,
        record_files,
    )

    config = workspace_config(workspace)
    root = config.memory_root()
    folder = knowledge_dir(root)
    if not folder.is_dir():
        if as_json:
            typer.echo(json.dumps({"root": str(root), "files": 0, "issues": []}, indent=2))
        else:
            typer.echo(f"No knowledge/ folder in {root}: nothing to lint.")
        return

    fs = memory_fs(root)
    issues = lint_knowledge(root, fs)
    files = len(record_files(fs, root))
    errors = sum(issue.severity == "error" for issue in issues)
    warnings = len(issues) - errors

    if as_json:
        report = {
            "root": str(root),
            "files": files,
            "errors": errors,
            "warnings": warnings,
            "issues": [
                {
                    "path": issue.shown_path(root),
                    "line": issue.line,
                    "severity": issue.severity,
                    "message": issue.message,
                }
                for issue in issues
            ],
        }
        typer.echo(json.dumps(report, indent=2))
    else:
        console = Console(highlight=False)
        if issues:
            table = Table(show_header=True, header_style="bold")
            table.add_column("File")
            table.add_column("Line", justify="right")
            table.add_column("Severity")
            table.add_column("Message", overflow="fold")
            for issue in issues:
                style = "red" if issue.severity == "error" else "yellow"
                table.add_row(
                    issue.shown_path(root),
                    "" if issue.line is None else str(issue.line),
                    f"[{style}]{issue.severity}[/{style}]",
                    issue.message,
                )
            console.print(table)
        noun = "file" if files == 1 else "files"
        console.print(
            f"{files} {noun} in {folder}: {errors} error(s), {warnings} warning(s)"
            if issues
            else f"{files} {noun} in {folder}: no issues"
        )
    if errors:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add the ``knowledge`` command group."""
    group = typer.Typer(help="Inspect knowledge records (knowledge/*.md).", no_args_is_help=True)

    group.command("lint")(lint)
    app.add_typer(group, name="knowledge")
