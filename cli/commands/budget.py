"""``pod budget``: a running pod's budgets in dollars and what it spent (``show``), and
``set`` to change them (the ``set_budget`` method; docs/budgets.md)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from cli.commands.control import SocketOpt, WorkspaceOpt
from cli.errors import CliError
from cli.start_options import budget_value

if TYPE_CHECKING:
    from orchestrator.serving.client import PodClient

__all__ = ["budget_text", "changes_of", "register"]

_POD = typer.Option("--pod", help="Pod name or socket path (default: this workspace's pod).")


def budget_text(budget: dict[str, Any] | None, pause_reason: str | None) -> str:
    """The budgets and the spend in one line for people (``pod status`` says the same)."""
    if not budget:
        return "no budget"
    from orchestrator.runtime.status import budget_line

    return budget_line(budget, pause_reason).removeprefix("budget: ")


def changes_of(budget_usd: str | None, turn_budget_usd: str | None) -> dict[str, float | None]:
    """``set_budget``'s params from the command line: an amount, or ``none`` for no cap."""
    changes: dict[str, float | None] = {}
    for key, value in (("budget_usd", budget_usd), ("turn_budget_usd", turn_budget_usd)):
        if value is None:
            continue
        if value.strip().lower() == "none":
            changes[key] = None
            continue
        try:
            amount = float(value)
        except ValueError:
            raise typer.BadParameter(f"{value!r} is not an amount of dollars or none") from None
        changes[key] = budget_value(amount)
    if not changes:
        raise CliError("name --budget-usd and/or --turn-budget-usd (an amount, or none)")
    return changes


def show(
    target: Annotated[str | None, _POD] = None,
    socket: SocketOpt = None,
    workspace: WorkspaceOpt = Path("."),
) -> None:
    """Print a running pod's budgets and what it spent against them."""
    from cli.client_sync import with_client
    from cli.pods.discovery import socket_for

    async def body(client: PodClient) -> str:
        status = await client.status()
        budget = status.budget.model_dump() if status.budget is not None else None
        return budget_text(budget, status.pause_reason)

    typer.echo(with_client(socket_for(target, socket, workspace), body))


def set_(
    budget_usd: Annotated[
        str | None,
        typer.Option(
            "--budget-usd",
            help="The session's budget in dollars (none: no cap).",
            show_default=False,
        ),
    ] = None,
    turn_budget_usd: Annotated[
        str | None,
        typer.Option(
            "--turn-budget-usd",
            help="One turn's budget in dollars (none: no cap).",
            show_default=False,
        ),
    ] = None,
    target: Annotated[str | None, _POD] = None,
    socket: SocketOpt = None,
    workspace: WorkspaceOpt = Path("."),
) -> None:
    """Change a running pod's budgets (a turn the budget paused goes on with `pod resume`)."""
    from cli.client_sync import with_client
    from cli.pods.discovery import socket_for

    changes = changes_of(budget_usd, turn_budget_usd)

    async def body(client: PodClient) -> str:
        reply = await client.request("set_budget", changes)
        if reply.event == "error":
            raise CliError(f"the pod refused: {reply.data.get('message')}")
        line = budget_text(reply.data.get("budget"), reply.data.get("pause_reason"))
        return line

    typer.echo(with_client(socket_for(target, socket, workspace), body))


def register(app: typer.Typer) -> None:
    """Add the ``budget`` command group."""
    group = typer.Typer(help="A running pod's budgets in dollars (docs/budgets.md).")
    group.callback(invoke_without_command=True)(_default)
    group.command("show")(show)
    group.command("set")(set_)
    app.add_typer(group, name="budget")


def _default(ctx: typer.Context) -> None:
    """Show the budgets when no subcommand is given."""
    if ctx.invoked_subcommand is None:
        show()
