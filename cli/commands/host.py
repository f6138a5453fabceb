"""``pod host``: serve many pods in one process (docs/host.md); ``ls``, ``evict`` and ``stop``
ask the running one."""

from __future__ import annotations

import asyncio
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
    http: Annotated[
        str | None,
        typer.Option(
            "--http",
            metavar="[HOST:]PORT",
            help="Serve the pods over HTTP too, with a token (docs/http.md); PORT 0: any free "
            "port. Default: the host table's http key.",
        ),
    ] = None,
    http_public: Annotated[
        bool,
        typer.Option(
            "--http-public",
            help="Allow --http on an address beyond the loopback (plain HTTP: TLS in front is "
            "yours to put).",
        ),
    ] = False,
    log_file: Annotated[Path | None, typer.Option("--log-file", hidden=True)] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log more.")] = False,
) -> None:
    """Run the host in the foreground until SIGTERM, SIGINT or `pod host stop`."""
    if ctx.invoked_subcommand is not None:
        return
    from cli.host_start import serve_host

    serve_host(
        idle_unload_s=idle_unload_s,
        max_loaded=max_loaded,
        exit_when_empty=exit_when_empty,
        log_file=log_file,
        verbose=verbose,
        http=http,
        http_public=http_public,
    )


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
