"""``pod acp``: the pod as an Agent Client Protocol agent on stdio, for editors (docs/acp.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from cli.commands.chat import AllowBashOpt, ModelOpt, PermissionModeOpt, ProviderOpt


def register(app: typer.Typer) -> None:
    """Add the ``acp`` command."""

    @app.command("acp")
    def acp(
        provider: ProviderOpt = None,
        model: ModelOpt = None,
        permission_mode: PermissionModeOpt = None,
        allow_bash: AllowBashOpt = None,
        script: Annotated[
            Path | None, typer.Option(help="JSON script for the scripted provider.")
        ] = None,
        attach: Annotated[
            Path | None,
            typer.Option(help="Drive the pod on this socket instead of starting pods."),
        ] = None,
        log_file: Annotated[
            Path | None, typer.Option(help="Write logs here instead of stderr.")
        ] = None,
        verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log more.")] = False,
    ) -> None:
        """Serve ACP on stdin/stdout: each editor session is a pod for the session's folder.

        Nothing but ACP messages is written to stdout; logs go to stderr (or --log-file).
        session/cancel pauses the turn (the next prompt closes it); /cancel cancels it.
        """
        import asyncio
        import logging

        from acp import run_agent

        from cli.commands.serve import permissions_overrides
        from orchestrator.acp import AcpOptions, PodAgent

        logging.basicConfig(
            level=logging.DEBUG if verbose else logging.WARNING,
            format="%(asctime)s %(levelname)s %(name)s: %(message)s",
            filename=str(log_file) if log_file else None,
        )
        overrides: dict[str, Any] = {
            "provider": provider,
            "model": model,
            "allow_bash": allow_bash,
            "permissions": permissions_overrides(permission_mode, allow_bash),
            "scripted_script": script.resolve() if script else None,
        }
        options = AcpOptions(
            overrides={k: v for k, v in overrides.items() if v is not None},
            attach=attach,
        )
        agent = PodAgent(options)

        async def main() -> None:
            try:
                await run_agent(agent)  # type: ignore[arg-type]
            finally:
                await agent.close()

        asyncio.run(main())
