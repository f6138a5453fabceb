"""``pod run "prompt"``: submit one prompt, stream the answer, exit with its outcome; and
``pod resume``, which streams a resumed turn the same way."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from pathlib import Path
from typing import Annotated, Any, TextIO

import typer

from cli.commands.control import SocketOpt, TargetArg, WorkspaceOpt, lifecycle_outcome
from cli.errors import CliError
from cli.interrupted import INTERRUPTED
from cli.options import workspace_option
from cli.run_output import EXIT_CODES, NOT_KEPT, ConnectionLost, Interrupts, Printer, stream
from cli.saved_turn import RESUME_HINT
from cli.start_options import WHEN_STARTED, StartOptions, options_into

__all__ = ["EXIT_CODES", "NOT_KEPT", "follow", "register", "resume", "run"]


@options_into("start", StartOptions, WHEN_STARTED)
def run(
    prompt: Annotated[
        str | None,
        typer.Argument(help="The prompt; @path attaches a file.", show_default=False),
    ] = None,
    workspace: Annotated[Path, workspace_option("Workspace of the pod.")] = Path("."),
    socket: Annotated[Path | None, typer.Option(help="Talk to the pod on this socket.")] = None,
    start: StartOptions = StartOptions(),  # noqa: B008 (replaced by the options)
    json_out: Annotated[
        bool, typer.Option("--json", help="Print every event as a JSON line.")
    ] = False,
    shutdown_after: Annotated[
        bool, typer.Option(help="Shut the pod down when the run ends.")
    ] = False,
    timeout: Annotated[float, typer.Option(help="Give up after this many seconds.")] = 600.0,
    attach: Annotated[
        bool,
        typer.Option(
            "--attach",
            help="Send no prompt: follow the turn that runs (its client gone, say) to its end.",
        ),
    ] = False,
) -> None:
    """Submit a prompt to the workspace's pod (starting one if needed) and stream the answer.

    A pod started here continues the workspace's latest session that has a conversation,
    unless --new or --session says otherwise.

    With --attach, no prompt is sent: the turn that runs already is followed to its end,
    as if this run had started it (what it waits for is asked here).

    A call that asks for approval is asked on the terminal; with no terminal (a script, a
    pipe) it is denied, and the model is told why. An MCP server's request for input is
    asked on the terminal too, field by field, and declined without one.

    \b
    Exit codes:
      0  finished
      1  errored, or the run could not start
      2  usage error: a flag or value pod run does not take
      3  paused (Ctrl-C, pod pause): pod resume continues it
      4  cancelled
      5  limit reached: the turn's max_rounds or max_turn_tokens
      6  paused at a budget: pod budget set, then pod resume
      130  Ctrl-C before the prompt was sent
    """
    from cli.pods.discovery import find_pod_for, socket_for
    from cli.pods.start import connect_or_start

    if start.new and start.session:
        raise CliError("--new starts a new session; it cannot be combined with --session")
    if attach:
        if prompt is not None:
            raise CliError("--attach follows the running turn; it takes no prompt")
        if chosen := start.choices_given():
            raise CliError(f"{', '.join(chosen)} choose how a pod starts; --attach does not")
        raise typer.Exit(follow(socket_for(None, socket, workspace), None, json_out, timeout))
    if prompt is None:
        raise typer.BadParameter(
            "missing: what to ask (or --attach, to follow the turn that runs)",
            param_hint="'PROMPT'",
        )
    if not prompt.strip():
        raise CliError("the prompt is empty")
    model = start.model
    if socket is not None:
        if chosen := start.choices_given():
            raise CliError(
                f"{', '.join(chosen)} choose how a pod starts; with --socket the pod already runs"
            )
        target = socket
    else:
        with StartInterrupt() as interrupt:
            started_here = find_pod_for(workspace) is None
            pod, notices = connect_or_start(workspace, start)
        if interrupt.pressed:
            if started_here:
                _stop(pod.socket)
            raise typer.Exit(INTERRUPTED)
        for notice in notices:
            sys.stderr.write(f"pod: warning: {notice}\n")
        if notices:
            model = None  # said already: the running pod keeps its settings
        target = pod.socket
    code = follow(
        target, ("run", {"input": prompt}), json_out, timeout, shutdown_after, model=model
    )
    raise typer.Exit(code)


def resume(
    target: TargetArg = None,
    socket: SocketOpt = None,
    workspace: WorkspaceOpt = Path("."),
    detach: Annotated[
        bool, typer.Option("--detach", help="Return once the turn runs again.")
    ] = False,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print every event as a JSON line.")
    ] = False,
    timeout: Annotated[float, typer.Option(help="Give up after this many seconds.")] = 600.0,
) -> None:
    """Resume a paused turn and stream it to its end, as pod run does (--detach: return
    at once). Exits as pod run does. A turn whose pod stopped under it (a crash, a killed
    host) is saved: its pod is started again, and the turn resumed."""
    from cli.pods.discovery import find_pod_for, socket_for
    from cli.pods.start import connect_or_start
    from cli.saved_turn import cut_off_turn

    if target is None and socket is None and find_pod_for(workspace) is None:
        if cut_off_turn(workspace) is None:
            socket_for(None, None, workspace)  # says no pod runs, and what to do
        # Its pod stopped under the turn (a crash, a killed host): start it again on that
        # session, where the turn comes back paused, and resume it.
        path = connect_or_start(workspace, StartOptions())[0].socket
    else:
        path = socket_for(target, socket, workspace)
    if detach:
        typer.echo(lifecycle_outcome(path, "resume", ("running",), min(timeout, 10.0)))
        return
    raise typer.Exit(follow(path, ("resume", {}), json_out, timeout))


def register(app: typer.Typer) -> None:
    """Add the ``run`` and ``resume`` commands."""
    app.command("run")(run)
    app.command("resume")(resume)


def follow(
    target: Path,
    request: tuple[str, dict[str, Any]] | None,
    json_out: bool,
    timeout: float,
    shutdown_after: bool = False,
    *,
    model: str | None = None,
) -> int:
    """Send ``request`` (``run``, ``resume``; None: follow the running turn) and stream the
    turn to its end; the exit code of how it ended."""
    from cli.client_sync import with_client

    async def body(client: Any) -> str:
        with Interrupts(client, run_sent=False) as interrupts:
            # The handler is in place before the request is sent, so a Ctrl-C from here on
            # pauses the turn (or, pressed before it was sent, sends nothing).
            await asyncio.sleep(0)
            if interrupts.pressed_before_run():
                return "interrupted"
            waiting: list[tuple[str, dict[str, Any]]] = []
            if request is not None:
                await client.send(request[0], request[1], id="run")
            else:
                status = await client.status()
                if status.status == "idle":
                    raise CliError(
                        f"no turn is running on pod {status.name}; `pod history` shows how "
                        "the last one ended"
                    )
                if status.status == "paused":
                    Printer(sys.stdout, sys.stderr).end("paused")
                    return "paused"
                waiting += [("approval", a.model_dump()) for a in status.approvals]
                waiting += [("elicitation", e.model_dump()) for e in status.elicitations]
            result = await asyncio.wait_for(
                stream(
                    client,
                    json_out,
                    interrupts,
                    following=request is None,
                    waiting=waiting,
                    model=model,
                ),
                timeout,
            )
        if shutdown_after:
            await client.send("shutdown")
        return result

    try:
        result = with_client(target, body)
    except ConnectionLost as lost:
        from cli.client_sync import answers

        if answers(target):  # the pod runs on; this client was dropped
            raise CliError(f"{lost}; `pod run --attach` follows the turn") from None
        # Every step of a turn is in its session before it happens: the pod that loads the
        # session again finds the turn there, paused.
        raise CliError(
            "the pod stopped before the run ended (its process was killed or crashed); "
            f"{RESUME_HINT}"
        ) from None
    return INTERRUPTED if result == "interrupted" else EXIT_CODES.get(result, 1)


class StartInterrupt:
    """Ctrl-C while ``pod run`` finds or starts its pod. Stopping halfway would leave a pod
    host with no pod, or a pod process nobody knows of, so the start runs to its end (a few
    seconds at most, bounded by its own timeouts); then the run stops what it started, and
    exits 130 having printed one line. A second Ctrl-C leaves at once."""

    def __init__(self, err: TextIO | None = None) -> None:
        self.err = err or sys.stderr
        self.pressed = False
        self._previous: Any = None

    def __enter__(self) -> StartInterrupt:
        self._previous = signal.signal(signal.SIGINT, self._press)
        return self

    def __exit__(self, *exc: object) -> None:
        signal.signal(signal.SIGINT, self._previous)

    def _press(self, signum: int, frame: object) -> None:
        if self.pressed:
            raise KeyboardInterrupt
        self.pressed = True
        self.err.write("\npod: interrupted before the prompt was sent\n")
        self.err.flush()


def _stop(socket: Path) -> None:
    """Shut down the pod this run started (a host started for it exits once it is empty)."""
    from cli.client_sync import with_client

    async def body(client: Any) -> None:
        await client.send("shutdown")
        async for event in client.events():
            if event.event == "shutdown":
                return

    with contextlib.suppress(CliError, TimeoutError):
        with_client(socket, lambda client: asyncio.wait_for(body(client), 30))
