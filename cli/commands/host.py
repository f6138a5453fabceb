"""``pod host``: serve many pods in one process (docs/host.md); ``ls``, ``evict`` and ``stop``
ask the running one."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from cli.errors import CliError


def _ask(method: str, params: dict[str, Any] | None = None) -> Any:
    from orchestrator.serving.host import HostError, ask_host

    try:
        return asyncio.run(ask_host(method, params))
    except HostError as exc:
        raise CliError(str(exc)) from None


def serve(
    ctx: typer.Context,
    idle_unload_s: Annotated[
        float | None,
        typer.Option(
            help="Unload a pod nobody used for this long (default: the host table of your config)."
        ),
    ] = None,
    max_loaded: Annotated[
        int | None,
        typer.Option(
            help="At most this many pods in memory (default: the host table of your config)."
        ),
    ] = None,
    exit_when_empty: Annotated[
        bool,
        typer.Option(
            "--exit-when-empty",
            help="Stop once no pod was left for host.idle_exit_s.",
            hidden=True,
        ),
    ] = False,
    log_file: Annotated[Path | None, typer.Option("--log-file", hidden=True)] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log more.")] = False,
) -> None:
    """Run the host in the foreground until SIGTERM, SIGINT or `pod host stop`."""
    if ctx.invoked_subcommand is not None:
        return
    from cli.commands.serve import setup_logging
    from orchestrator.config.loading import ConfigError, load_config
    from orchestrator.serving.host import Host, run_host
    from orchestrator.serving.host.address import control_socket
    from orchestrator.serving.liveness import socket_is_live
    from orchestrator.serving.server import ServerError

    setup_logging(log_file, verbose)
    try:
        settings = load_config(Path.home()).host
    except ConfigError as exc:
        raise CliError(str(exc)) from None
    if socket_is_live(control_socket()):
        raise CliError(f"a pod host already runs for this user ({control_socket()})")
    host = Host(
        idle_unload_s=idle_unload_s if idle_unload_s is not None else settings.idle_unload_s,
        max_loaded=max_loaded if max_loaded is not None else settings.max_loaded,
        exit_when_empty=exit_when_empty,
        idle_exit_s=settings.idle_exit_s,
    )
    from orchestrator.adapters.inspection import forbid_inspection

    forbid_inspection()
    from orchestrator.adapters.providers.preload import preload_provider, wants_provider

    if wants_provider():  # the SDK's import overlaps the first load (docs/performance.md)
        preload_provider()
    sys.stderr.write(f"pod host listening on {host.control_path}\n")
    sys.stderr.flush()
    try:
        asyncio.run(run_host(host))
    except ServerError as exc:
        raise CliError(str(exc)) from None


def ls(json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """List the host's pods, loaded or not, and its memory."""
    from orchestrator.serving.host import HostListing

    listing = HostListing.model_validate(_ask("list"))
    if json_out:
        typer.echo(listing.model_dump_json())
        return
    from rich.console import Console

    from cli.pods.table import PodListing, host_line, pods_table, tree_order

    rows = [PodListing.of_host(row, listing.host.pid) for row in listing.pods]
    console = Console(highlight=False)
    console.print(pods_table(tree_order(rows), width=console.width, pids=False), crop=False)
    console.print(host_line(listing.host), markup=False)


def evict(name: Annotated[str, typer.Argument(help="The pod to unload.")]) -> None:
    """Unload a pod to its session file now (refused while it is busy or has clients)."""
    _ask("evict", {"name": name})
    typer.echo(f"pod {name} unloaded")


def stop() -> None:
    """Shut down every pod of the host, and the host."""
    _ask("stop")
    typer.echo("pod host stopping")


def register(app: typer.Typer) -> None:
    """Add the ``host`` command group."""
    group = typer.Typer(
        help="Serve many pods in one process: idle ones are unloaded to their session file "
        "and loaded again when a client connects (docs/host.md).",
        invoke_without_command=True,
    )
    app.add_typer(group, name="host")

    group.callback()(serve)
    group.command("ls")(ls)
    group.command("evict")(evict)
    group.command("stop")(stop)
