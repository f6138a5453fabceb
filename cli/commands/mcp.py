"""``pod mcp ls``: the workspace's MCP servers, started here, with their status and tools."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from cli.options import workspace_option


def register(app: typer.Typer) -> None:
    """Add the ``mcp`` command group."""
    group = typer.Typer(help="MCP tool servers (docs/mcp.md).", no_args_is_help=True)
    app.add_typer(group, name="mcp")

    @group.command("ls")
    def ls(
        workspace: Annotated[Path, workspace_option("The workspace whose config to read.")] = Path(
            "."
        ),
        json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    ) -> None:
        """Start each configured server, list its tools as the model sees them, stop it.

        Exits 1 when a server failed to start (its message says why, with its stderr).
        """
        import asyncio

        from cli.errors import CliError
        from orchestrator.config import ConfigError, load_config
        from orchestrator.mcp.servers import McpServers

        try:
            config = load_config(workspace)
        except ConfigError as exc:
            raise CliError(str(exc)) from None
        failures: list[str] = []
        servers = McpServers.from_config(
            config.mcp.servers, config.workspace, lambda _level, message: failures.append(message)
        )

        async def inspect() -> list[dict[str, Any]]:
            await servers.start()
            offered = {t.name for t in servers.tools(set())}
            rows = [
                {
                    "name": server.name,
                    "status": server.status,
                    "tools": [
                        {"name": name, "offered": name in offered}
                        for name in sorted(f"mcp__{server.name}__{t.name}" for t in server.tools)
                    ],
                }
                for server in servers.servers
            ]
            await servers.close()
            return rows

        rows = asyncio.run(inspect())
        disabled = [n for n, s in config.mcp.servers.items() if not s.enabled]
        if json_out:
            typer.echo(json.dumps({"servers": rows, "disabled": disabled, "problems": failures}))
        else:
            if not rows and not disabled:
                typer.echo("no MCP servers configured (see docs/mcp.md)")
            for row in rows:
                typer.echo(f"{row['name']}: {row['status']}")
                for tool in row["tools"]:
                    mark = "" if tool["offered"] else "  (not offered)"
                    typer.echo(f"  {tool['name']}{mark}")
            for name in disabled:
                typer.echo(f"{name}: disabled")
            for problem in failures:
                typer.echo(f"! {problem}", err=True)
        if any(row["status"].startswith("failed") for row in rows):
            raise typer.Exit(1)
