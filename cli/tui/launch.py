"""Running the chat UI on the terminal: a pod's app, then a child's after ``/attach``, and back."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from cli.tui.app import PodApp
from cli.tui.link import PodLink
from cli.tui.slash_commands import ATTACH_PREFIX
from orchestrator.serving.client import PodClient


def run_ui(socket: Path, *, notices: Sequence[str] = ()) -> str:
    """Run the UI attached to the pod on ``socket``; returns how it ended.

    ``notices`` are warnings the command line has for the user (e.g. an option a running pod
    cannot apply): printed before the UI takes the screen they would be lost, so it draws them.
    """
    from cli.errors import CliError
    from orchestrator.serving.liveness import socket_is_live

    if not socket_is_live(socket):
        # Fail before taking over the terminal, with the usual one-line error.
        raise CliError(f"no pod is listening on {socket}")

    while True:
        result = _run_app(socket, notices)
        notices = ()
        if not result.startswith(ATTACH_PREFIX):
            return result
        child = Path(result.removeprefix(ATTACH_PREFIX))
        if socket_is_live(child):
            run_ui(child)  # its own loop: a grandchild comes back to the child
        # Back to this pod whatever happened there (a child that shut down is gone).


def _run_app(socket: Path, notices: Sequence[str]) -> str:
    from cli.errors import CliError

    async def connect() -> PodLink:
        return await PodClient.connect(socket)

    app = PodApp(connect, notices=notices)
    result = app.run()
    if app.return_code:
        raise CliError(app.error_message or "the UI failed")
    return result or "detached"
