"""``pod jobs``: the background jobs of a pod (``bash`` with ``background: true``), and
``--kill ID`` to end one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from cli.commands.control import SocketOpt, TargetArg, WorkspaceOpt
from cli.errors import CliError
from cli.terminal_text import visible

if TYPE_CHECKING:
    from orchestrator.serving.client import PodClient

KILL_TIMEOUT_S = 15.0
"""A kill takes the job's grace and the supervisor's rounds; this bounds the wait for it."""


def jobs(
    target: TargetArg = None,
    socket: SocketOpt = None,
    workspace: WorkspaceOpt = Path("."),
    kill: Annotated[
        str | None,
        typer.Option(
            "--kill", help="End this job (j1, …) and everything it started.", show_default=False
        ),
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List a pod's background jobs (running ones, and the latest that ended), or end one
    with --kill ID. Exits 1 when the pod or the job is not there."""
    from cli.client_sync import with_client
    from cli.pods.discovery import socket_for
    from orchestrator.protocol import StatusData
    from orchestrator.serving.client import ClientError

    async def body(client: PodClient) -> list[dict[str, Any]]:
        if kill is None:
            status = await client.status()
        else:
            reply = await client.request("kill_job", {"id": kill}, timeout=KILL_TIMEOUT_S)
            try:
                status = reply.expect(StatusData)
            except ClientError as exc:
                message = str(exc).removeprefix("the pod refused: invalid_request: ")
                raise CliError(message) from None
        return [job.model_dump() for job in status.jobs]

    rows = with_client(socket_for(target, socket, workspace), body)
    if kill is not None:
        rows = [row for row in rows if row["id"] == kill]
    if json_out:
        typer.echo(json.dumps(rows))
        return
    if kill is not None:
        from orchestrator.capabilities.jobs.report import short_command

        commands = [f": {short_command(row['command'])}" for row in rows]
        typer.echo(visible(f"killed {kill}{commands[0] if commands else ''}"))
        return
    if not rows:
        typer.echo("no background jobs")
        return
    for line in _lines(rows):
        typer.echo(visible(line.removeprefix("job ")))


def register(app: typer.Typer) -> None:
    """Add ``pod jobs``."""

    app.command("jobs")(jobs)


def _lines(rows: list[dict[str, Any]]) -> list[str]:
    from orchestrator.runtime.status import job_lines

    return job_lines(rows)
