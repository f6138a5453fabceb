"""``pod acp``: the pod as an Agent Client Protocol agent on stdio, for editors (docs/acp.md)."""

from __future__ import annotations

import logging
import signal
from pathlib import Path
from typing import Annotated, Any

import typer

from cli.start_options import (
    BudgetUsdOpt,
    MaxRoundsOpt,
    NoHostOpt,
    StartAllowBashOpt,
    StartFallbackModelOpt,
    StartModelOpt,
    StartPermissionModeOpt,
    StartProviderOpt,
    StartWebOpt,
    TurnBudgetUsdOpt,
)

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
"""Each stops ``pod acp`` as the end of its input does: every pod it started is shut down."""


PARSE_ERROR_LOG = "Error parsing JSON-RPC message"
"""What the ACP SDK logs, with a traceback, for an input line that is not JSON."""


def one_line_parse_errors(record: logging.LogRecord) -> bool:
    """Turn the SDK's traceback for an unreadable input line into one line; the agent goes on
    reading (a person typing at ``pod acp`` sees what was wrong, not a stack)."""
    if record.getMessage() == PARSE_ERROR_LOG and record.exc_info:
        error = record.exc_info[1]
        record.msg = "ignored an input line that is not JSON-RPC: %s"
        record.args = (error,)
        record.exc_info = None
        record.exc_text = None
    return True


def acp(
    provider: StartProviderOpt = None,
    model: StartModelOpt = None,
    fallback_model: StartFallbackModelOpt = None,
    permission_mode: StartPermissionModeOpt = None,
    allow_bash: StartAllowBashOpt = None,
    web: StartWebOpt = None,
    budget_usd: BudgetUsdOpt = None,
    turn_budget_usd: TurnBudgetUsdOpt = None,
    max_rounds: MaxRoundsOpt = None,
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
    no_host: NoHostOpt = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log more.")] = False,
) -> None:
    """Serve ACP on stdin/stdout: each editor session is a pod for the session's folder.

    Nothing but ACP messages is written to stdout; logs go to stderr (or --log-file).
    session/cancel pauses the turn (the next prompt closes it); /cancel cancels it.
    """
    import asyncio
    import itertools
    import json
    import logging
    import os

    from acp import run_agent

    from cli.acp import AcpOptions, LaunchedPod, PodAgent, PodLaunchError
    from cli.errors import CliError
    from cli.pods.launch import launch_in_host, launch_serve_process
    from cli.pods.start import uses_host
    from cli.start_options import StartOptions
    from orchestrator.config.paths import safe_pod_name

    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        filename=str(log_file) if log_file else None,
    )
    for handler in logging.getLogger().handlers:
        handler.addFilter(one_line_parse_errors)
    # Each session's pod loads into the user's pod host, or is a `pod serve` of its own,
    # with the options given here; a new session unless session/load names one.
    options = StartOptions(
        new=True, provider=provider, model=model, fallback_model=fallback_model,
        permission_mode=permission_mode,
        allow_bash=allow_bash, web=web, no_host=no_host, budget_usd=budget_usd,
        turn_budget_usd=turn_budget_usd, max_rounds=max_rounds,
    )  # fmt: skip
    serve_args = options.serve_args(None)
    if script is not None:
        serve_args += ["--script", str(script.resolve())]
    numbers = itertools.count(1)

    async def launch(workspace: Path, session: Path | None, mcp: dict[str, Any]) -> LaunchedPod:
        folder = safe_pod_name(workspace.resolve().name or "root")[:32]
        name = f"acp-{folder}-{os.getpid()}-{next(numbers)}"
        try:
            in_host = uses_host(workspace, no_host)
        except CliError as exc:
            raise PodLaunchError(str(exc)) from None
        if in_host:
            return await launch_in_host(
                workspace, session, name=name, options=options, script=script,
                mcp_servers=mcp,
            )  # fmt: skip
        # Through a pipe, never the command line: every user can read /proc/PID/cmdline,
        # and an editor's servers carry tokens in their headers and env.
        return await launch_serve_process(
            workspace,
            session,
            name=name,
            serve_args=[*serve_args, *(["--mcp-servers-stdin"] if mcp else [])],
            stdin_data=json.dumps(mcp).encode() if mcp else None,
        )

    agent = PodAgent(AcpOptions(launch=None if attach else launch, attach=attach))

    async def main() -> int:
        # A signal ends the agent as a closed stdin does: its pods are shut down first.
        loop = asyncio.get_running_loop()
        serving = asyncio.current_task()
        assert serving is not None
        stopped_by: list[int] = []

        def stop(signum: int) -> None:
            if not stopped_by:  # a second signal must not cut the pods' shutdown short
                stopped_by.append(signum)
                serving.cancel()

        for signum in STOP_SIGNALS:
            loop.add_signal_handler(signum, stop, signum)
        try:
            await run_agent(agent, use_unstable_protocol=True)  # type: ignore[arg-type]
        except asyncio.CancelledError:
            if not stopped_by:
                raise
            serving.uncancel()
        finally:
            await agent.close()
        return 128 + stopped_by[0] if stopped_by else 0

    code = asyncio.run(main())
    if code:
        raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    """Add the ``acp`` command."""
    app.command("acp")(acp)
