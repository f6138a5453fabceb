"""``pod diagram``: render the lifecycle machine (placeholder until the diagram module lands)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add the ``diagram`` command."""

    @app.command("diagram")
    def diagram() -> None:
        """Render the pod lifecycle diagram."""
        raise typer.Exit(1)
