"""One-shot commands for scripts: status, ls, history, compact, pause, cancel, shutdown (resume
streams its turn: :mod:`cli.commands.run`)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from cli.errors import CliError
from cli.options import workspace_option
from cli.terminal_text import visible, visible_json

if TYPE_CHECKING:
    from orchestrator.serving.client import PodClient

# rich is imported where a command prints with it: `pod run` imports this module for its
# options, and reaches its pod without loading rich (docs/performance.md).

TargetArg = Annotated[
    str | None, typer.Argument(help="Pod name or socket path (default: this workspace's pod).")
]
SocketOpt = Annotated[Path | None, typer.Option(help="The pod's socket path.")]
WorkspaceOpt = Annotated[Path, workspace_option("Find the pod serving this workspace.")]


def _socket(target: str | None, socket: Path | None, workspace: Path) -> Path:
    from cli.pods.discovery import socket_for

    return socket_for(target, socket, workspace)


def status(
    target: TargetArg = None,
    socket: SocketOpt = None,
    workspace: WorkspaceOpt = Path("."),
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Show a pod's state, model, turn and token usage."""
    from cli.client_sync import with_client

    async def body(client: PodClient) -> dict[str, Any]:
        return (await client.status()).model_dump(exclude={"id"})

    data = with_client(_socket(target, socket, workspace), body)
    if json_out:
        typer.echo(json.dumps(data))
        return
    from rich.console import Console

    from orchestrator.runtime.status import status_text

    # soft_wrap: a warning naming paths stays one line (the terminal wraps it), not a
    # path folded mid-name.
    Console(highlight=False).print(visible(status_text(data)), markup=False, soft_wrap=True)


def ls(json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """List your pods: those of your pod host (loaded or not) and pods running as
    processes of their own, each child under its parent."""
    from rich.console import Console

    from cli.pods.table import host_line, live_pods, pods_table

    rows, host = live_pods()
    if json_out:
        typer.echo(json.dumps([row.as_json() for row in rows]))
        return
    if not rows:
        typer.echo("no pods are running (start one with `pod chat` or `pod serve`)")
        return
    console = Console(highlight=False)
    console.print(pods_table(rows, width=console.width), crop=False)
    if host is not None:
        console.print(host_line(host), markup=False)


def history(
    target: TargetArg = None,
    socket: SocketOpt = None,
    workspace: WorkspaceOpt = Path("."),
    json_out: Annotated[bool, typer.Option("--json", help="Print the items as JSON.")] = False,
) -> None:
    """Print a pod's committed history."""
    from rich.console import Console

    from cli.client_sync import with_client
    from cli.render import render_items

    async def body(client: PodClient) -> list[dict[str, Any]]:
        return (await client.history()).items

    items = with_client(_socket(target, socket, workspace), body)
    if json_out:
        typer.echo(visible_json(json.dumps(items, ensure_ascii=False)))
    else:
        render_items(Console(), items)


def compact(
    target: TargetArg = None,
    socket: SocketOpt = None,
    workspace: WorkspaceOpt = Path("."),
    focus: Annotated[
        str | None,
        typer.Option(help="What the summary should keep above all.", show_default=False),
    ] = None,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the compaction.")] = 600.0,
) -> None:
    """Summarise the older part of the conversation now (or at the running turn's next
    round boundary) and print what it saved."""
    from cli.client_sync import with_client
    from cli.compaction_text import compaction_text
    from orchestrator.protocol import AlertData, CompactionData, ErrorData, ShutdownData

    async def body(client: PodClient) -> str:
        await client.send("compact", {"focus": focus} if focus else {}, id="cmd")

        async def outcome() -> str:
            async for event in client.events():
                match event.payload:
                    case ErrorData(id="cmd", code=code, message=message):
                        raise CliError(f"{code}: {message}")
                    case CompactionData() as done:
                        return compaction_text(done)
                    case AlertData(source="compaction", level="info", message=message):
                        return message  # nothing to compact yet
                    case AlertData(source="compaction", level="error", message=message):
                        raise CliError(message)
                    case ShutdownData():
                        raise CliError("the pod shut down before it compacted")
            raise CliError("the pod closed the connection before it compacted")

        return await asyncio.wait_for(outcome(), timeout)

    typer.echo(visible(with_client(_socket(target, socket, workspace), body)))


def mode(
    name: Annotated[
        str | None,
        typer.Argument(
            help="The mode: default, accept-edits, plan, read-only or yolo (never wider than "
            "the pod was started with). Absent: print the mode.",
            show_default=False,
        ),
    ] = None,
    target: Annotated[
        str | None,
        typer.Option("--pod", help="Pod name or socket path (default: this workspace's pod)."),
    ] = None,
    socket: SocketOpt = None,
    workspace: WorkspaceOpt = Path("."),
) -> None:
    """Print or switch a running pod's permission mode (from its next tool decision)."""
    from cli.client_sync import with_client

    async def body(client: PodClient) -> str:
        if name is None:
            return str((await client.status()).permission_mode)
        reply = await client.request("set_mode", {"mode": name})
        if reply.event == "error":
            raise CliError(str(reply.data.get("message")))
        return str(reply.data["permission_mode"])

    typer.echo(visible(with_client(_socket(target, socket, workspace), body)))


def register(app: typer.Typer) -> None:
    """Add status, ls, history, mode and the lifecycle commands."""

    app.command("status")(status)
    app.command("mode")(mode)
    app.command("ls")(ls)
    app.command("history")(history)
    app.command("compact")(compact)

    def lifecycle(method: str, wait_for: tuple[str, ...], help_text: str) -> None:
        @app.command(method, help=help_text)
        def command(
            target: TargetArg = None,
            socket: SocketOpt = None,
            workspace: WorkspaceOpt = Path("."),
            timeout: Annotated[float, typer.Option(help="Seconds to wait for the effect.")] = 10.0,
        ) -> None:
            path = _socket(target, socket, workspace)
            typer.echo(lifecycle_outcome(path, method, wait_for, timeout))

    lifecycle("pause", ("paused", "idle"), "Pause the running turn (resume continues it).")
    # `pod resume` streams the resumed turn as `pod run` does: cli/commands/run.py.
    lifecycle("cancel", ("idle",), "Cancel the running turn (it is closed, not resumable).")
    lifecycle("shutdown", ("stopped",), "Shut the pod down (its session stays on disk).")


def lifecycle_outcome(socket: Path, method: str, wait_for: tuple[str, ...], timeout: float) -> str:
    """Send a lifecycle method and wait until the pod's status is one of ``wait_for`` (or it
    stopped); the status it reached."""
    from cli.client_sync import with_client
    from orchestrator.protocol import ErrorData, ShutdownData, StatusData

    async def body(client: PodClient) -> str:
        await client.send(method, id="cmd")

        async def outcome() -> str:
            async for event in client.events():
                match event.payload:
                    case ErrorData(id="cmd", code=code, message=message):
                        raise CliError(f"{code}: {message}")
                    case StatusData(status=status) if status in wait_for:
                        return status
                    case ShutdownData():
                        return "stopped"
            return "stopped"

        return await asyncio.wait_for(outcome(), timeout)

    return with_client(socket, body)
