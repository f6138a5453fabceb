"""``pod chat`` and ``pod attach``: the interactive terminal UI on a pod."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer

from cli.options import workspace_option
from cli.start_options import WHEN_STARTED, StartOptions, options_into


def _farewell(result: str, name: str, socket: Path, again: str | None = None) -> None:
    """Say what is true of the pod as the UI leaves: shut down, still running (``again``:
    the command that comes back to it), or gone."""
    from orchestrator.serving.liveness import socket_is_live

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


def _chat_on(socket: Path, start: StartOptions, continue_: bool) -> None:
    """``pod chat --socket``: the UI on a running pod, as ``pod attach --socket`` (what only a
    starting pod takes is refused: it would be silently ignored)."""
    from cli.errors import CliError

    if start != StartOptions() or continue_:
        raise CliError(
            "--socket talks to a pod that runs: --new, --session, --continue, --no-host, --name "
            "and the model, provider, permission, thinking, effort and web options only apply to a "
            "pod `pod chat` starts"
        )
    from cli.tui.launch import run_ui

    _farewell(run_ui(socket), socket.stem, socket, f"pod chat --socket {socket}")


@options_into("start", StartOptions, WHEN_STARTED)
def chat(
    workspace: Annotated[
        Path, workspace_option("The workspace; a pod is started for it if none runs.")
    ] = Path("."),
    start: StartOptions = StartOptions(),  # noqa: B008 (replaced by the options)
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
    from cli.pods.start import connect_or_start

    if start.new and (continue_ or start.session):
        raise CliError(
            "--new starts a new session; it cannot be combined with --continue or --session"
        )
    options = replace(start, name=name)
    if socket is not None:
        _chat_on(socket, options, continue_)
        return
    pod, notices = connect_or_start(workspace, options)

    from cli.tui.launch import run_ui

    _farewell(run_ui(pod.socket, notices=notices), pod.name, pod.socket)


def attach(
    target: Annotated[
        str | None, typer.Argument(help="Pod name or socket path (default: this folder's pod).")
    ] = None,
    socket: Annotated[Path | None, typer.Option(help="The pod's socket path.")] = None,
) -> None:
    """Attach the terminal UI to a running pod (several UIs can attach at once)."""
    from cli.pods.discovery import socket_for

    path = socket_for(target, socket)

    from cli.tui.launch import run_ui

    _farewell(run_ui(path), target or path.stem, path)


def register(app: typer.Typer) -> None:
    """Add the ``chat`` and ``attach`` commands."""
    app.command("chat")(chat)
    app.command("attach")(attach)
