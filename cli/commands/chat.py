"""``pod chat`` and ``pod attach``: the interactive terminal UI on a pod."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from cli.options import thinking_value, workspace_option

NewOpt = Annotated[
    bool,
    typer.Option("--new", help="Start a new session instead of continuing the latest one."),
]
SessionOpt = Annotated[
    str | None,
    typer.Option(
        help="Continue this session: a name from `pod sessions ls`, or a path.",
        show_default=False,
    ),
]
ModelOpt = Annotated[
    str | None,
    typer.Option(
        help="Model name, when a pod is started (default: the config's).", show_default=False
    ),
]
ProviderOpt = Annotated[
    str | None,
    typer.Option(
        help="anthropic or scripted, when a pod is started (default: anthropic if a key is set).",
        show_default=False,
    ),
]
AllowBashOpt = Annotated[
    bool | None,
    typer.Option(
        "--allow-bash/--no-allow-bash",
        help="When a pod is started: enable (or force off) its bash tool.",
        show_default=False,
    ),
]
PermissionModeOpt = Annotated[
    str | None,
    typer.Option(
        help="When a pod is started: default (ask before edits and commands), accept-edits, "
        "yolo or read-only.",
        show_default=False,
    ),
]


ThinkingOpt = Annotated[
    str | None,
    typer.Option(
        help="When a pod is started: auto, adaptive, off, or a budget of thinking tokens.",
        show_default=False,
        callback=thinking_value,
    ),
]
NoHostOpt = Annotated[
    bool,
    typer.Option(
        "--no-host",
        help="When a pod is started: as a process of its own, not in the pod host (docs/host.md).",
    ),
]
EffortOpt = Annotated[
    str | None,
    typer.Option(
        help="When a pod is started: low, medium, high, xhigh or max.", show_default=False
    ),
]


def _farewell(result: str, name: str, socket: Path, again: str | None = None) -> None:
    """Say what is true of the pod as the UI leaves: shut down, still running (``again``:
    the command that comes back to it), or gone."""
    from orchestrator.serving.server import socket_is_live

    if result == "shutdown":
        sys.stderr.write(f"pod {name} shut down\n")
    elif socket_is_live(socket):
        again = again or f"pod attach {name}"
        sys.stderr.write(f"left the UI; pod {name} keeps running ({again})\n")
    else:
        # The pod stopped or its process died while the UI was open: nothing runs to attach.
        sys.stderr.write(
            f"left the UI; pod {name} is not running (it stopped or its process ended); "
            "`pod chat` in its workspace starts one that continues its session\n"
        )


def _chat_on(
    socket: Path,
    *,
    new: bool,
    session: str | None,
    continue_: bool,
    no_host: bool,
    settings: list[object],
) -> None:
    """``pod chat --socket``: the UI on a running pod, as ``pod attach --socket`` (what only a
    starting pod takes is refused: it would be silently ignored)."""
    from cli.errors import CliError

    starting = [new, session is not None, continue_, no_host]
    if any(starting) or any(value is not None for value in settings):
        raise CliError(
            "--socket talks to a pod that runs: --new, --session, --continue, --no-host, --name "
            "and the model, provider, permission, thinking and effort options only apply to a "
            "pod `pod chat` starts"
        )
    from cli.tui.launch import run_ui

    _farewell(run_ui(socket), socket.stem, socket, f"pod chat --socket {socket}")


def register(app: typer.Typer) -> None:
    """Add the ``chat`` and ``attach`` commands."""

    @app.command("chat")
    def chat(
        workspace: Annotated[
            Path, workspace_option("The workspace; a pod is started for it if none runs.")
        ] = Path("."),
        new: NewOpt = False,
        session: SessionOpt = None,
        model: ModelOpt = None,
        provider: ProviderOpt = None,
        allow_bash: AllowBashOpt = None,
        permission_mode: PermissionModeOpt = None,
        thinking: ThinkingOpt = None,
        effort: EffortOpt = None,
        no_host: NoHostOpt = False,
        continue_: Annotated[
            bool,
            typer.Option(
                "--continue",
                help="The default: continue the latest session that has a conversation.",
            ),
        ] = False,
        socket: Annotated[
            Path | None,
            typer.Option(
                help="Chat with the pod listening on this socket (a fleet's gateway socket, "
                "as `pod fleet add` prints it); nothing is started.",
            ),
        ] = None,
        name: Annotated[
            str | None,
            typer.Option(
                help="The pod of this name, started under it if none runs: a second pod in "
                "the workspace, beside the one already there (to continue a fork).",
                show_default=False,
            ),
        ] = None,
    ) -> None:
        """Chat with the pod of a workspace in a terminal UI (starting the pod if needed).

        A pod started here continues the workspace's latest session that has a conversation,
        unless --new or --session says otherwise.
        """
        from cli.errors import CliError
        from cli.pods import StartOptions, connect_or_start

        if new and (continue_ or session):
            raise CliError(
                "--new starts a new session; it cannot be combined with --continue or --session"
            )
        if socket is not None:
            _chat_on(socket, new=new, session=session, continue_=continue_, no_host=no_host,
                     settings=[model, provider, allow_bash, permission_mode, thinking, effort,
                               name])  # fmt: skip
            return
        options = StartOptions(
            new=new,
            session=session,
            model=model,
            provider=provider,
            allow_bash=allow_bash,
            permission_mode=permission_mode,
            thinking=thinking,
            effort=effort,
            no_host=no_host,
            name=name,
        )
        pod, notices = connect_or_start(workspace, options)

        from cli.tui.launch import run_ui

        _farewell(run_ui(pod.socket, notices=notices), pod.name, pod.socket)

    @app.command("attach")
    def attach(
        target: Annotated[
            str | None, typer.Argument(help="Pod name or socket path (default: this folder's pod).")
        ] = None,
        socket: Annotated[Path | None, typer.Option(help="The pod's socket path.")] = None,
    ) -> None:
        """Attach the terminal UI to a running pod (several UIs can attach at once)."""
        from cli.pods import socket_for

        path = socket_for(target, socket)

        from cli.tui.launch import run_ui

        _farewell(run_ui(path), target or path.stem, path)
