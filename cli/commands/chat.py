"""``pod chat`` and ``pod attach``: the interactive terminal UI on a pod."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer


def _farewell(result: str, name: str) -> None:
    if result == "shutdown":
        sys.stderr.write(f"pod {name} shut down\n")
    else:
        sys.stderr.write(f"left the UI; pod {name} keeps running (pod attach {name})\n")


def register(app: typer.Typer) -> None:
    """Add the ``chat`` and ``attach`` commands."""

    @app.command("chat")
    def chat(
        workspace: Annotated[
            Path, typer.Option(help="The workspace; a pod is started for it if none runs.")
        ] = Path("."),
        continue_: Annotated[
            bool,
            typer.Option("--continue", help="When starting a pod, reload the latest session."),
        ] = False,
    ) -> None:
        """Chat with the pod of a workspace in a terminal UI (starting the pod if needed)."""
        from cli.errors import CliError
        from cli.pods import ensure_pod, find_pod_for

        if not workspace.is_dir():
            raise CliError(f"workspace {workspace} is not a directory")
        if continue_ and find_pod_for(workspace) is not None:
            sys.stderr.write("pod: a pod already runs here; --continue applies to new pods only\n")
        pod = ensure_pod(workspace, extra_args=["--continue"] if continue_ else None)

        from cli.tui.app import run_ui

        _farewell(run_ui(pod.socket), pod.name)

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

        from cli.tui.app import run_ui

        _farewell(run_ui(path), target or path.stem)
