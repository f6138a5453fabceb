"""``pod serve``: run a pod in the foreground on its socket."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from cli.errors import CliError
from cli.options import workspace_option
from cli.start_options import (
    AllowBashOpt,
    BudgetUsdOpt,
    EffortOpt,
    FallbackModelOpt,
    MaxRoundsOpt,
    ModelOpt,
    PermissionModeOpt,
    PodSettings,
    ProviderOpt,
    SandboxOpt,
    ThinkingOpt,
    TurnBudgetUsdOpt,
    WebOpt,
)

if TYPE_CHECKING:
    from orchestrator.config.model import PodConfig


def serve(
    workspace: Annotated[Path, workspace_option("The workspace the pod works in.")] = Path("."),
    socket: Annotated[Path | None, typer.Option(help="Socket path (default: runtime dir).")] = None,
    name: Annotated[str | None, typer.Option(help="Pod name (default: the folder name).")] = None,
    provider: ProviderOpt = None,
    model: ModelOpt = None,
    session: Annotated[
        str | None,
        typer.Option(
            help="A session from `pod sessions ls`, or a session file's path (created if "
            "missing). Default: a new session.",
            show_default=False,
        ),
    ] = None,
    continue_: Annotated[
        bool,
        typer.Option("--continue", help="Continue the latest session that has a conversation."),
    ] = False,
    new: Annotated[
        bool,
        typer.Option("--new", help="The default: start a new session."),
    ] = False,
    allow_bash: AllowBashOpt = None,
    permission_mode: PermissionModeOpt = None,
    read_root: Annotated[
        list[Path] | None,
        typer.Option(help="Let the pod read this folder too (repeatable).", show_default=False),
    ] = None,
    write_root: Annotated[
        list[Path] | None,
        typer.Option(help="Let the pod write this folder too (repeatable).", show_default=False),
    ] = None,
    parent_socket: Annotated[
        Path | None, typer.Option(help="Report turn ends, errors and shutdown to this pod.")
    ] = None,
    script: Annotated[
        Path | None, typer.Option(help="JSON script for the scripted provider.")
    ] = None,
    file_ref_style: Annotated[
        str | None, typer.Option(help="system_message or synthetic_read.")
    ] = None,
    thinking: ThinkingOpt = None,
    effort: EffortOpt = None,
    fallback_model: FallbackModelOpt = None,
    web: WebOpt = None,
    sandbox: SandboxOpt = None,
    budget_usd: BudgetUsdOpt = None,
    turn_budget_usd: TurnBudgetUsdOpt = None,
    max_rounds: MaxRoundsOpt = None,
    mcp_servers_stdin: Annotated[
        bool,
        typer.Option(
            "--mcp-servers-stdin",
            hidden=True,
            help="Read MCP servers as JSON ({name: entry}) from stdin, added to the config's "
            "(pod acp: their headers and env hold secrets, which a command line would show "
            "to every user in /proc/PID/cmdline).",
        ),
    ] = False,
    child_config_stdin: Annotated[
        bool,
        typer.Option(
            "--child-config-stdin",
            hidden=True,
            help="Read the pod's whole configuration as JSON from stdin (a sub-pod, "
            "configured by its parent; other options but --log-file are ignored).",
        ),
    ] = False,
    http: Annotated[
        str | None,
        typer.Option(
            "--http",
            metavar="[HOST:]PORT",
            help="Serve the pod over HTTP too, with a token (docs/http.md); PORT 0: any free port.",
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
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log more.")] = False,
    log_file: Annotated[
        Path | None,
        typer.Option(
            "--log-file",
            hidden=True,
            help="Write stdout and stderr to this file, rotated at its size cap (how the "
            "commands that start pods in the background keep their logs bounded).",
        ),
    ] = None,
) -> None:
    """Run a pod in the foreground, serving the JSON-lines protocol on a Unix socket."""
    from cli.process_logging import setup_logging
    from orchestrator.adapters.session import SessionError, resolve_session
    from orchestrator.config.loading import ConfigError, load_config
    from orchestrator.config.paths import default_socket
    from orchestrator.serving.pod import PodSetupError, serve_pod
    from orchestrator.serving.server import ServerError

    setup_logging(log_file, verbose)
    address = None
    if http is not None:
        from cli.http_api import http_address

        address = http_address(http, public=http_public)
    if new and (continue_ or session):
        raise CliError(
            "--new starts a new session; it cannot be combined with --continue or --session"
        )
    try:
        config = _read_child_config() if child_config_stdin else None
        mcp_servers = _read_mcp_servers() if mcp_servers_stdin else None
        session_path = resolve_session(workspace, session) if session else None
        config = config or load_config(
            workspace,
            name=name,
            session=session_path,
            **PodSettings(
                provider=provider,
                model=model,
                allow_bash=allow_bash,
                permission_mode=permission_mode,
                thinking=thinking,
                effort=effort,
                fallback_model=fallback_model,
                web=web,
                sandbox=sandbox,
                budget_usd=budget_usd,
                turn_budget_usd=turn_budget_usd,
                max_rounds=max_rounds,
            ).overrides(),
            # Given on a command line, a relative path means the shell's folder.
            read_roots=[p.resolve() for p in read_root] if read_root else None,
            write_roots=[p.resolve() for p in write_root] if write_root else None,
            parent_socket=parent_socket,
            scripted_script=script,
            file_ref_style=file_ref_style,
            mcp={"servers": mcp_servers} if mcp_servers else None,
        )
    except (ConfigError, SessionError) as exc:
        raise CliError(str(exc)) from None
    socket_path = socket or config.socket or default_socket(config.pod_name())
    kind = config.resolved_provider()
    if kind == "scripted" and config.provider is None:
        sys.stderr.write(
            "pod: no ANTHROPIC_API_KEY set: running offline on the scripted provider\n"
        )
    if kind == "scripted" and model is not None:
        sys.stderr.write(f"pod: warning: {scripted_ignores_model(model)}\n")

    async def main() -> None:
        ready = asyncio.Event()
        task = asyncio.create_task(
            serve_pod(config, socket_path=socket_path, continue_=continue_, ready=ready)
        )
        waiter = asyncio.create_task(ready.wait())
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
        if ready.is_set():
            sys.stderr.write(f"pod {config.pod_name()} listening on {socket_path} ({kind})\n")
            sys.stderr.flush()
        waiter.cancel()
        api = None
        if address is not None and ready.is_set():
            from cli.http_api import serve_pod_http

            api = await serve_pod_http(config.pod_name(), socket_path, address)
        try:
            pod = await task
        finally:
            if api is not None:
                await api.stop()
        kept = (
            f"session {pod.session_path}"
            if pod.session_path.exists()
            else "its session was empty and is not kept"
        )
        sys.stderr.write(f"pod {config.pod_name()} stopped; {kept}\n")

    # Tool processes are the pod's children: keep them out of its /proc environ and memory
    # (cli.main does it for every pod process; a serve started another way is covered too).
    from orchestrator.adapters.inspection import forbid_inspection

    forbid_inspection()
    from orchestrator.adapters.providers.preload import preload_provider, wants_provider

    if wants_provider(kind):  # the SDK's import overlaps the session's load
        preload_provider()
    try:
        asyncio.run(main())
    except (PodSetupError, ServerError, SessionError, ConfigError) as exc:
        raise CliError(str(exc)) from None


def register(app: typer.Typer) -> None:
    """Add the ``serve`` command."""
    app.command("serve")(serve)


def _read_child_config() -> PodConfig:
    """The configuration a parent pod writes to its child's stdin (then closes it)."""
    from pydantic import ValidationError

    from orchestrator.config.model import PodConfig

    try:
        return PodConfig.model_validate_json(sys.stdin.buffer.read())
    except (OSError, ValidationError) as exc:
        raise CliError(f"--child-config-stdin: not a pod configuration: {exc}") from None


def _read_mcp_servers() -> dict[str, Any]:
    """The MCP servers ``pod acp`` writes to this pod's stdin (then closes it)."""
    try:
        servers = json.loads(sys.stdin.buffer.read() or b"{}")
    except (OSError, ValueError) as exc:
        raise CliError(f"--mcp-servers-stdin: stdin is not a JSON object: {exc}") from None
    if not isinstance(servers, dict):
        raise CliError("--mcp-servers-stdin: stdin is not a JSON object of servers by name")
    return servers


def scripted_ignores_model(model: str) -> str:
    """The warning for a ``--model`` the scripted provider does not use."""
    return (
        f"--model {model} does not apply: the scripted provider answers, not a model "
        "(set ANTHROPIC_API_KEY, or --provider anthropic, to ask one)"
    )
