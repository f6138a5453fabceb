"""``pod run "prompt"``: submit one prompt, stream the answer, exit with its outcome."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, TextIO

import typer

from cli.commands.chat import (
    AllowBashOpt,
    EffortOpt,
    ModelOpt,
    NewOpt,
    NoHostOpt,
    PermissionModeOpt,
    ProviderOpt,
    SessionOpt,
    ThinkingOpt,
)
from cli.errors import CliError, print_error
from cli.interrupted import INTERRUPTED
from cli.options import workspace_option
from cli.terminal_text import visible

EXIT_CODES = {"finished": 0, "errored": 1, "paused": 3, "cancelled": 4, "limit_reached": 5}
"""``pod run``'s exit code for each ``run_end`` result. 2 is click's, for a usage error (a
flag it does not know, a value it cannot take), so a script can tell "my command line was
wrong" from "the turn hit its round or token limit"."""

APPROVAL_ID = "approval"
"""The request id of ``pod run``'s approve and deny, to tell their errors from the run's."""

ELICITATION_ID = "elicitation"
"""The request id of ``pod run``'s answers to requests for input."""

NOT_KEPT = "[interrupted · not kept in history]"
"""Marks a partial answer left on stdout by a run that did not finish it."""


def register(app: typer.Typer) -> None:
    """Add the ``run`` command."""

    @app.command("run")
    def run(
        prompt: Annotated[str, typer.Argument(help="The prompt; @path attaches a file.")],
        workspace: Annotated[Path, workspace_option("Workspace of the pod.")] = Path("."),
        socket: Annotated[Path | None, typer.Option(help="Talk to the pod on this socket.")] = None,
        new: NewOpt = False,
        session: SessionOpt = None,
        model: ModelOpt = None,
        provider: ProviderOpt = None,
        allow_bash: AllowBashOpt = None,
        permission_mode: PermissionModeOpt = None,
        thinking: ThinkingOpt = None,
        effort: EffortOpt = None,
        no_host: NoHostOpt = False,
        json_out: Annotated[
            bool, typer.Option("--json", help="Print every event as a JSON line.")
        ] = False,
        shutdown_after: Annotated[
            bool, typer.Option(help="Shut the pod down when the run ends.")
        ] = False,
        timeout: Annotated[float, typer.Option(help="Give up after this many seconds.")] = 600.0,
    ) -> None:
        """Submit a prompt to the workspace's pod (starting one if needed) and stream the answer.

        A pod started here continues the workspace's latest session that has a conversation,
        unless --new or --session says otherwise.

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
        """
        from cli.client_sync import with_client
        from cli.pods import StartOptions, connect_or_start

        if not prompt.strip():
            raise CliError("the prompt is empty")
        if new and session:
            raise CliError("--new starts a new session; it cannot be combined with --session")
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
        )
        if socket is not None:
            chosen = options.settings_given() + (["--new"] if new else [])
            chosen += ["--session"] if session else []
            if chosen:
                raise CliError(
                    f"{', '.join(chosen)} choose how a pod starts; with --socket the pod "
                    "already runs"
                )
            target = socket
        else:
            from cli.pods import find_pod_for

            with StartInterrupt() as start:
                started_here = find_pod_for(workspace) is None
                pod, notices = connect_or_start(workspace, options)
            if start.pressed:
                if started_here:
                    _stop(pod.socket)
                raise typer.Exit(INTERRUPTED)
            for notice in notices:
                sys.stderr.write(f"pod: warning: {notice}\n")
            target = pod.socket

        async def body(client: Any) -> str:
            import asyncio

            with Interrupts(client, run_sent=False) as interrupts:
                # The handler is in place before the prompt is sent, so a Ctrl-C from here on
                # pauses the turn (or, pressed before it was sent, sends nothing).
                await asyncio.sleep(0)
                if interrupts.pressed_before_run():
                    return "interrupted"
                await client.send("run", {"input": prompt}, id="run")
                result = await asyncio.wait_for(_stream(client, json_out, interrupts), timeout)
            if shutdown_after:
                await client.send("shutdown")
            return result

        result = with_client(target, body)
        raise typer.Exit(INTERRUPTED if result == "interrupted" else EXIT_CODES.get(result, 1))


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


INTERRUPT_ID = "interrupt"
"""The request id of the pause or cancel a Ctrl-C sends."""

DOUBLE_PRESS_S = 1.0
"""A second Ctrl-C this soon after the first cancels the turn instead of pausing it."""


class Interrupts:
    """Ctrl-C during ``pod run`` does what ``pod pause`` does; twice within a second, what
    ``pod cancel`` does. The run then ends as the pod reports it (exit 3 paused, 4 cancelled),
    and a waiting approval is withdrawn by the pod, which ends the terminal's question."""

    def __init__(self, client: Any, err: TextIO | None = None, *, run_sent: bool = True) -> None:
        self.client = client
        self.err = err or sys.stderr
        self._last: float | None = None
        self._sent: set[asyncio.Task[None]] = set()
        self.paused = False
        """The pause has already taken effect (the run ended ``paused``)."""
        self.cancelling = asyncio.Event()
        self.run_sent = run_sent
        """False until the prompt is sent (:meth:`pressed_before_run`)."""

    def __enter__(self) -> Interrupts:
        asyncio.get_running_loop().add_signal_handler(signal.SIGINT, self.pressed)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.get_running_loop().remove_signal_handler(signal.SIGINT)

    def pressed_before_run(self) -> bool:
        """Whether Ctrl-C came before the prompt was sent (then it is not sent: exit 130);
        from now on a Ctrl-C pauses the turn."""
        if self._last is not None:
            self.err.write("\npod: interrupted before the prompt was sent\n")
            self.err.flush()
            return True
        self.run_sent = True
        return False

    def pressed(self, now: float | None = None) -> str:
        """One Ctrl-C: pause, or cancel when it follows another within a second."""
        now = time.monotonic() if now is None else now
        if not self.run_sent:
            self._last = now  # nothing to pause yet: the prompt is not sent (see above)
            return "none"
        double = self._last is not None and now - self._last <= DOUBLE_PRESS_S
        self._last = now
        method = "cancel" if double else "pause"
        if double:
            self.err.write("\npod: cancelling the turn\n")
            self.cancelling.set()
        else:
            self.err.write("\npod: pausing the turn (Ctrl-C again within a second cancels it)\n")
        self.err.flush()
        if double and self.paused:
            # Already paused: a paused turn is not cancelled directly, so it is resumed and
            # cancelled in one write; the pod interrupts it before its first step, so nothing
            # it was doing starts again.
            lines = [
                {"method": "resume", "id": INTERRUPT_ID},
                {"method": "cancel", "id": INTERRUPT_ID},
            ]
            send = self.client.send_raw(b"".join(json.dumps(x).encode() + b"\n" for x in lines))
        else:
            send = self.client.send(method, {}, id=INTERRUPT_ID)
        task = asyncio.get_running_loop().create_task(send)
        self._sent.add(task)
        task.add_done_callback(self._sent.discard)
        return method

    async def second_press(self) -> bool:
        """After a pause took effect: wait out the rest of the second since the press; True
        when a second Ctrl-C came (the turn is being cancelled)."""
        if self._last is None:
            return False
        self.paused = True
        left = DOUBLE_PRESS_S - (time.monotonic() - self._last)
        if left > 0 and not self.cancelling.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.cancelling.wait(), left)
        return self.cancelling.is_set()


@dataclass
class _Printer:
    """Writes a run's events for a person: the answer on stdout, the rest on stderr.

    One failure reaches a client as several events: an error alert from where it happened (the
    provider giving up, the session file), the ``error`` event, and the turn's error alert.
    It is printed once, as the ``error`` event's line: error alerts wait for the end of the
    run and are dropped when the run failed, since the ``error`` event says it already.
    """

    out: TextIO
    err: TextIO
    open_text: bool = False
    """Answer text was streamed that no ``text_done`` has confirmed yet."""
    output_open: bool = False
    """A running tool's live output ended mid-line."""
    held: list[str] = field(default_factory=list)
    failed: bool = False

    def event(self, name: str, data: dict[str, Any]) -> None:
        """Print one event."""
        if name == "alert" and data["level"] == "error":
            self.held.append(str(data["message"]))
        elif name == "error":
            if not self.failed:
                self.failed = True
                self._end_lines()
                print_error(f"{data['code']}: {data['message']}", self.err)
        elif name == "text_delta":
            self.out.write(visible(data["text"]))
            self.out.flush()
            self.open_text = True
        elif name == "text_done":
            self.out.write("\n")
            self.open_text = False
        elif name == "tool_call_done":
            args = json.dumps(data["arguments"], ensure_ascii=False)
            self.err.write(visible(f"⚙ {data['name']} {args[:120]}") + "\n")
        elif name == "tool_output_delta":
            text = str(data["text"])
            self.err.write(visible(text))
            self.err.flush()
            if text:
                self.output_open = not text.endswith("\n")
        elif name == "tool_result":
            if self.output_open:
                self.err.write("\n")
                self.output_open = False
            mark = "✗" if data["is_error"] else "✓"
            self.err.write(visible(f"  {mark} {data['summary']}") + "\n")
        elif name == "alert":
            self.err.write(visible(f"! {data['level']}: {data['message']}") + "\n")

    def end(self, result: str) -> None:
        """The run ended: mark an answer that was cut off, then what still waits."""
        self._end_lines()
        if not self.failed:
            for message in dict.fromkeys(self.held):
                self.err.write(visible(f"! error: {message}") + "\n")
        self.held = []
        if result == "paused":
            self.err.write(
                "pod: the turn is paused; `pod resume` continues it, the next `pod run` replaces it\n"
            )
        self.err.flush()

    def _end_lines(self) -> None:
        """Close a streamed answer (marked as not kept) and a tool's open output line."""
        if self.open_text:
            self.out.write("\n")
            self.out.flush()
            self.err.write(NOT_KEPT + "\n")
            self.open_text = False
        if self.output_open:
            self.err.write("\n")
            self.output_open = False


async def _stream(client: Any, json_out: bool, interrupts: Interrupts | None = None) -> str:
    """Print events until the run ends; returns the ``run_end`` result."""
    from cli.approval_prompt import TerminalApprover
    from cli.elicitation_prompt import TerminalElicitor

    async def answer(method: str, params: dict[str, Any]) -> None:
        await client.send(method, params, id=APPROVAL_ID)

    async def answer_input(method: str, params: dict[str, Any]) -> None:
        await client.send(method, params, id=ELICITATION_ID)

    printer = _Printer(sys.stdout, sys.stderr)
    approver = TerminalApprover(answer)
    elicitor = TerminalElicitor(answer_input, terminal=approver.terminal)
    started = False
    warned = False
    try:
        async for event in client.events():
            data = event.data
            if event.event == "status" and not warned and not json_out:
                # The pod's first status (sent on connecting) says what its config ignored.
                warned = True
                for warning in data.get("config_warnings") or []:
                    sys.stderr.write(visible(f"pod: warning: {warning}") + "\n")
            if json_out:
                sys.stdout.write(json.dumps({"event": event.event, "data": data}) + "\n")
                sys.stdout.flush()
            if event.event == "error" and data.get("id") in ("run", None) and not started:
                raise CliError(f"{data['code']}: {data['message']}")
            if event.event == "turn_start":
                started = True
            if event.event == "approval_request":
                await approver.request(data)
            elif event.event == "approval_resolved":
                approver.approval_resolved(data)
            elif event.event == "elicitation_request":
                await elicitor.request(data)
            elif event.event == "elicitation_resolved":
                elicitor.elicitation_resolved(data)
            if event.event == "error" and data.get("id") == INTERRUPT_ID:
                # Pressed when there was nothing to pause (the turn had just ended, say).
                continue
            if event.event == "error" and data.get("id") in (APPROVAL_ID, ELICITATION_ID):
                # An answer that came too late (another client answered first): not a failure.
                sys.stderr.write(visible(f"! warn: {data['message']}") + "\n")
                continue
            if (
                event.event == "run_end"
                and data["result"] == "paused"
                and interrupts is not None
                and await interrupts.second_press()
            ):
                continue  # a second Ctrl-C: the turn is resumed and cancelled; wait for that end
            if event.event in ("run_end", "shutdown"):
                result = str(data["result"]) if event.event == "run_end" else "cancelled"
                if not json_out:
                    printer.end(result)
                return result
            if not json_out:
                printer.event(event.event, data)
    finally:
        await approver.close()
        await elicitor.close()
    raise CliError("the pod closed the connection before the run ended")
