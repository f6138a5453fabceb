"""``pod sandbox show``: what a sandboxed command of this folder's pod can read, write and
reach, from the config a pod started here would use (docs/sandbox.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from cli.options import workspace_config, workspace_option


def show(
    workspace: Annotated[
        Path, workspace_option("The workspace whose sandbox to show.", "--workspace", "-w")
    ] = Path("."),
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Show what a sandboxed command in this folder's pod can read, write and reach.

    The config is the one `pod serve` would load here (your config, narrowed by the
    workspace's); the protected paths and the paths deny rules cover are found as they
    are now, as before each command. JSON: read, write, private, hidden, read_only,
    network, problems.
    """
    from orchestrator.adapters.sandbox.show import sandbox_view, view_lines

    config = workspace_config(workspace)
    socket = [config.socket] if config.socket is not None else []
    view = sandbox_view(config, extra_hidden=socket)
    if json_out:
        typer.echo(json.dumps(view, indent=2))
    else:
        typer.echo("\n".join(view_lines(view)))


def register(app: typer.Typer) -> None:
    """Add the ``sandbox`` command group."""
    group = typer.Typer(help="The sandbox of bash (docs/sandbox.md).", no_args_is_help=True)
    app.add_typer(group, name="sandbox")

    group.command("show")(show)
