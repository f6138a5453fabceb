"""``pod protocol schema``: the JSON Schema of every method and event."""

from __future__ import annotations

import json

import typer


def schema() -> None:
    """Print the JSON Schema of every method's params and every event's data."""
    from orchestrator.protocol import protocol_schema

    typer.echo(json.dumps(protocol_schema(), indent=2))


def register(app: typer.Typer) -> None:
    """Add the ``protocol`` command group."""
    group = typer.Typer(help="Inspect the JSON-lines protocol.", no_args_is_help=True)

    group.command("schema")(schema)
    app.add_typer(group, name="protocol")
