"""``pod mcp ls``: the workspace's MCP servers, with their status and tools: as the running
pod has them, or started here for a look when no pod runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from cli.options import workspace_option

if TYPE_CHECKING:
    from orchestrator.protocol import McpServerData


def register(app: typer.Typer) -> None:
    """Add the ``mcp`` command group."""
    group = typer.Typer(help="MCP tool servers (docs/mcp.md).", no_args_is_help=True)
    app.add_typer(group, name="mcp")

    @group.command("ls")
    def ls(
        workspace: Annotated[Path, workspace_option("The workspace whose servers to show.")] = Path(
            "."
        ),
        socket: Annotated[
            Path | None, typer.Option(help="Ask the pod at this socket about its servers.")
        ] = None,
        json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    ) -> None:
        """Show each MCP server's status and its tools as the model sees them.

        When a pod serves the workspace (or --socket names one), its live servers are shown,
        with their restarts; otherwise each configured server is started here, listed and
        stopped. Exits 1 when a server has failed (its message says why, with its stderr).
        """
        from cli.pods import find_pod_for

        if socket is None:
            found = find_pod_for(workspace)
            socket = found.socket if found is not None else None
        if socket is not None:
            pod, rows, problems = _from_pod(socket)
        else:
            pod, (rows, problems) = None, _started_here(workspace)
        if json_out:
            typer.echo(json.dumps({"pod": pod, "servers": rows, "problems": problems}))
        else:
            _print(pod, rows, problems)
        if any(row["status"].startswith("failed") for row in rows):
            raise typer.Exit(1)


def _from_pod(socket: Path) -> tuple[str, list[dict[str, Any]], list[str]]:
    """The servers of the pod at ``socket``, as its ``get_status`` reports them."""
    from cli.client_sync import with_client
    from orchestrator.client import PodClient

    async def body(client: PodClient) -> tuple[str, list[dict[str, Any]]]:
        status = await client.status()
        return status.name, _rows(status.mcp)

    name, rows = with_client(socket, body)
    return name, rows, []


def _started_here(workspace: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """Start the workspace's servers, list them, stop them."""
    import asyncio

    from cli.errors import CliError
    from orchestrator.config import ConfigError, load_config
    from orchestrator.errors import SetupError
    from orchestrator.mcp.client_side import settings_of
    from orchestrator.mcp.servers import McpServers

    try:
        config = load_config(workspace)
    except ConfigError as exc:
        raise CliError(str(exc)) from None
    problems: list[str] = []

    async def inspect() -> list[dict[str, Any]]:
        from orchestrator.sandbox.sandboxing import open_sandboxing

        # Servers with sandbox = true run in the sandbox here too, or not at all.
        sandboxing = await open_sandboxing(config) if config.mcp.sandboxed() else None
        servers = McpServers.from_config(
            config.mcp.servers,
            config.workspace,
            # Only what went wrong: a server's log lines and info notes are not problems.
            lambda level, message: problems.append(message) if level != "info" else None,
            sandboxing,
            settings_of(config),
        )
        try:
            await servers.start()
            offered = {t.name for t in servers.tools(set())}
            report = servers.report(offered)
            await servers.close()
        finally:
            if sandboxing is not None:
                await sandboxing.aclose()
        return _rows(report)

    try:
        return asyncio.run(inspect()), problems
    except SetupError as exc:  # the sandbox's proxy could not start
        raise CliError(str(exc)) from None


def _rows(report: list[McpServerData]) -> list[dict[str, Any]]:
    """Servers as ``--json`` prints them: each tool with whether the model is offered it."""
    return [
        {
            "name": server.name,
            "status": server.status,
            "restarts": server.restarts,
            "survivors": server.survivors,
            "tools": [
                {"name": n, "offered": n in server.offered}
                | ({"why_not": server.not_offered[n]} if n in server.not_offered else {})
                for n in server.tools
            ],
        }
        for server in report
    ]


def _print(pod: str | None, rows: list[dict[str, Any]], problems: list[str]) -> None:
    if pod is not None:
        typer.echo(f"MCP servers of the running pod {pod}:")
    if not rows:
        typer.echo("no MCP servers configured (see docs/mcp.md)")
    for row in rows:
        restarts = f" (restarted {row['restarts']}×)" if row["restarts"] else ""
        typer.echo(f"{row['name']}: {row['status']}{restarts}")
        for tool in row["tools"]:
            why = f": {tool['why_not']}" if "why_not" in tool else ""
            mark = "" if tool["offered"] else f"  (not offered{why})"
            typer.echo(f"  {tool['name']}{mark}")
        for survivor in row["survivors"]:
            typer.echo(f"  left running, unsupervised: {survivor}")
    for problem in problems:
        typer.echo(f"! {problem}", err=True)
