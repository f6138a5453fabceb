"""``pod mcp ls``: the workspace's MCP servers, with their status and tools: as the running
pod has them, or started here for a look when no pod runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from cli.options import workspace_config, workspace_option
from cli.terminal_text import visible

if TYPE_CHECKING:
    from orchestrator.protocol import McpServerData


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
    from cli.pods.discovery import find_pod_for

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


def login_cmd(
    name: Annotated[
        str,
        typer.Argument(
            # Escaped: rich takes [mcp.servers] for markup and prints nothing.
            help="The HTTP server, as named in \\[mcp.servers]."
        ),
    ],
    workspace: Annotated[Path, workspace_option("The workspace whose config names it.")] = Path(
        "."
    ),
) -> None:
    """Sign in to an HTTP MCP server that asks for OAuth, once, in a browser.

    The pod registers itself with the server's authorization server (or names itself by the
    entry's oauth_client_metadata_url where the server takes one) and opens the sign-in
    page ($BROWSER, or the desktop's; the address is printed too); the browser comes back to
    a loopback address. The tokens are kept 0600 in the state directory, and pods started
    afterwards use them (a pod already running picks them up when the server restarts).
    After a server refused a call for want of scope, signing in again asks for that scope.
    With oauth_grant = "client_credentials" no browser is needed (a pod signs in itself).
    """
    _login(workspace, name)


def client_metadata_cmd(
    name: Annotated[str, typer.Argument(help="The HTTP server, as named in \\[mcp.servers].")],
    workspace: Annotated[Path, workspace_option("The workspace whose config names it.")] = Path(
        "."
    ),
) -> None:
    """Print the client ID metadata document to host at the entry's oauth_client_metadata_url.

    Authorization servers that take URL-based client IDs fetch it from there when the pod
    signs in (docs/mcp.md#url-based-client-ids-client-id-metadata-documents).
    """
    from cli.errors import CliError
    from orchestrator.adapters.mcp.oauth import client_metadata_document
    from orchestrator.config.loading import ConfigError, load_config

    try:
        config = load_config(workspace)
    except ConfigError as exc:
        raise CliError(str(exc)) from None
    server = config.mcp.servers.get(name)
    if server is None or server.oauth_client_metadata_url is None:
        raise CliError(
            f"MCP server {name} has no oauth_client_metadata_url in the config: set it to the "
            "https URL where you will host the document"
        )
    typer.echo(json.dumps(client_metadata_document(server.oauth_client_metadata_url), indent=2))


def register(app: typer.Typer) -> None:
    """Add the ``mcp`` command group."""
    group = typer.Typer(help="MCP tool servers (docs/mcp.md).", no_args_is_help=True)
    app.add_typer(group, name="mcp")

    group.command("ls")(ls)
    group.command("login")(login_cmd)
    group.command("client-metadata")(client_metadata_cmd)


def _login(workspace: Path, name: str) -> None:
    """Sign in to the HTTP server ``name`` of the workspace's config (docs/mcp.md#oauth)."""
    import asyncio
    import webbrowser

    from cli.errors import CliError
    from orchestrator.adapters.mcp.oauth import login
    from orchestrator.config.loading import ConfigError, load_config

    try:
        config = load_config(workspace)
    except ConfigError as exc:
        raise CliError(str(exc)) from None
    server = config.mcp.servers.get(name)
    if server is None:
        known = ", ".join(sorted(config.mcp.servers)) or "none"
        raise CliError(f"no MCP server is named {name!r} in the config (the servers: {known})")
    if server.url is None:
        raise CliError(f"MCP server {name} is a stdio server: only HTTP servers sign in")

    async def open_url(url: str) -> None:
        typer.echo(visible(f"Sign in to MCP server {name} in your browser:\n  {url}"), err=True)
        # $BROWSER, or the desktop's; where none can start, the URL above is the way.
        if not await asyncio.to_thread(webbrowser.open, url):
            typer.echo("(no browser could be started: open the address yourself)", err=True)
        typer.echo("Waiting for the browser to come back…", err=True)

    try:
        path = asyncio.run(login(name, server, open_url))
    except Exception as exc:  # the SDK's OAuth and HTTP errors are many; each is one line
        from orchestrator.adapters.mcp.transport import describe

        raise CliError(f"could not sign in to MCP server {name}: {describe(exc)}") from None
    typer.echo(f"signed in to MCP server {name}; its tokens are kept in {path} (mode 0600)")


def _from_pod(socket: Path) -> tuple[str, list[dict[str, Any]], list[str]]:
    """The servers of the pod at ``socket``, as its ``get_status`` reports them."""
    from cli.client_sync import with_client
    from orchestrator.serving.client import PodClient

    async def body(client: PodClient) -> tuple[str, list[dict[str, Any]], list[str]]:
        status = await client.status()
        return status.name, _rows(status.mcp), list(status.config_warnings)

    name, rows, warnings = with_client(socket, body)
    _warn(warnings)
    return name, rows, []


def _warn(warnings: list[str]) -> None:
    """What the config ignored (a grant a workspace's config may not give), one line each on
    stderr, as ``pod run`` and ``pod status`` say it."""
    for warning in warnings:
        typer.echo(visible(f"pod: warning: {warning}"), err=True)


def _started_here(workspace: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """Start the workspace's servers, list them, stop them."""
    import asyncio

    from cli.errors import CliError
    from orchestrator.adapters.mcp.client_side import settings_of
    from orchestrator.adapters.mcp.servers import McpServers
    from orchestrator.errors import SetupError

    config = workspace_config(workspace)
    problems: list[str] = []

    async def inspect() -> list[dict[str, Any]]:
        from orchestrator.adapters.sandbox.sandboxing import open_sandboxing

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
        typer.echo(visible(f"{row['name']}: {row['status']}{restarts}"))
        for tool in row["tools"]:
            why = f": {tool['why_not']}" if "why_not" in tool else ""
            mark = "" if tool["offered"] else f"  (not offered{why})"
            typer.echo(visible(f"  {tool['name']}{mark}"))
        for survivor in row["survivors"]:
            typer.echo(visible(f"  left running, unsupervised: {survivor}"))
    for problem in problems:
        typer.echo(visible(f"! {problem}"), err=True)
