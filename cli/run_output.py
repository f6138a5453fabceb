"""A turn's output as ``pod run`` and ``pod resume`` show it: the answer on stdout, tool
activity on stderr, approvals and requests for input asked on the terminal, Ctrl-C as pause
(twice: cancel), and the exit code of how the turn ended."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
import time
from dataclasses import dataclass, field
from typing import Any, TextIO

from cli.cited_stream import CitedStream
from cli.errors import CliError, print_error
from cli.terminal_text import visible
from cli.todo_text import todo_lines
from cli.web_text import call_text, result_text

__all__ = [
    "ALREADY_RUNNING_HINT",
    "APPROVAL_ID",
    "DOUBLE_PRESS_S",
    "ELICITATION_ID",
    "EXIT_CODES",
    "INTERRUPT_ID",
    "NOT_KEPT",
    "ConnectionLost",
    "Interrupts",
    "stream",
]

EXIT_CODES = {
    "finished": 0,
    "errored": 1,
    "paused": 3,
    "cancelled": 4,
    "limit_reached": 5,
    "budget": 6,
}
"""``pod run``'s exit code for each ``run_end`` result (``budget``: ``paused`` with
``pause_reason: "budget"``, a cap paused it; 3 stays a person's pause). 2 is click's, for a usage error (a
flag it does not know, a value it cannot take), so a script can tell "my command line was
wrong" from "the turn hit its round or token limit"."""

APPROVAL_ID = "approval"
"""The request id of ``pod run``'s approve and deny, to tell their errors from the run's."""

ELICITATION_ID = "elicitation"
"""The request id of ``pod run``'s answers to requests for input."""

NOT_KEPT = "[interrupted · not kept in history]"
"""Marks a partial answer left on stdout by a run that did not finish it."""


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
            self.err.write("\npod: interrupted; nothing was sent to the pod\n")
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
class Printer:
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
    cited: CitedStream = field(default_factory=CitedStream)
    """The answer's citations: ``[n]`` after the text each cites, the sources after it."""
    budget_said: str = ""
    """What the pod said when a budget paused the turn (printed again as the run ends)."""

    def event(self, name: str, data: dict[str, Any]) -> None:
        """Print one event."""
        if self.cited.ends_message(name, data):
            self._sources()
        if name in ("server_tool_call", "server_tool_result", "citation"):
            self._web(name, data)
        elif name == "text_done" and (self.cited.citing or data.get("citations")):
            done = self.cited.done(str(data["text"]), data.get("citations"), seq=data.get("seq"))
            self.out.write(done)
            self.out.flush()
            self.open_text = False
        elif name == "alert" and data["level"] == "error":
            self.held.append(str(data["message"]))
        elif name == "error":
            if not self.failed:
                self.failed = True
                self._end_lines()
                print_error(f"{data['code']}: {data['message']}", self.err)
        elif name == "text_delta":
            self.out.write(self.cited.delta(str(data["text"])))
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
        elif name == "todos":  # the whole list each time it changes (it is short)
            head, *items = todo_lines(data["todos"])
            self.err.write("".join(f"{line}\n" for line in [f"☰ {head}", *items]))

    def _web(self, name: str, data: dict[str, Any]) -> None:
        """The API's own tools: a line per search or fetch, one per result; a citation
        holds the answer until its blocks are committed (see :mod:`cli.cited_stream`)."""
        if name == "citation":
            self.cited.citation()
            return
        if self.output_open:
            self.err.write("\n")
            self.output_open = False
        if name == "server_tool_call":
            self.err.write(f"⌕ {call_text(str(data['name']), data.get('input') or {})}\n")
        else:
            sources = [(s.get("url"), s.get("title")) for s in data.get("sources") or []]
            error = data.get("error_code")
            mark = "✗" if error else "→"
            self.err.write(f"  {mark} {result_text(str(data['name']), sources, error)}\n")
        self.err.flush()

    def _sources(self) -> None:
        """A citing message was committed: end its line, then list its sources."""
        lines = [f"[{n}] {s.line()}" for n, s in enumerate(self.cited.sources(), start=1)]
        self.out.write("\n" + "".join(f"\n{line}" for line in lines) + ("\n" if lines else ""))
        self.out.flush()

    def end(self, result: str) -> None:
        """The run ended: mark an answer that was cut off, then what still waits."""
        if self.cited.committing:
            self._sources()
        self._end_lines()
        if not self.failed:
            for message in dict.fromkeys(self.held):
                self.err.write(visible(f"! error: {message}") + "\n")
        self.held = []
        if result == "paused":
            self.err.write(
                "pod: the turn is paused; `pod resume` continues it, the next `pod run` replaces it\n"
            )
        elif result == "budget":
            # The pod's own sentence: the cap, the spend, how to go on.
            self.err.write(visible(f"pod: {self.budget_said or 'paused at the budget'}") + "\n")
        self.err.flush()

    def _end_lines(self) -> None:
        """Close a streamed answer (marked as not kept) and a tool's open output line."""
        if self.open_text:
            self.out.write(self.cited.unkept() + "\n")
            self.cited.sources()  # what it cited was never kept
            self.out.flush()
            self.err.write(NOT_KEPT + "\n")
            self.open_text = False
        if self.output_open:
            self.err.write("\n")
            self.output_open = False


ALREADY_RUNNING_HINT = (
    "a turn is already running on this pod (the client that started it may be gone): "
    "follow it to its end with `pod run --attach`, or pause it with `pod pause`"
)


async def stream(
    client: Any,
    json_out: bool,
    interrupts: Interrupts | None = None,
    *,
    following: bool = False,
    waiting: list[tuple[str, dict[str, Any]]] | None = None,
    model: str | None = None,
) -> str:
    """Print events until the run ends; returns the ``run_end`` result.

    ``following``: the turn runs already (``pod resume``, ``pod run --attach``), so an error
    without an id is the turn's, printed as it ends it; otherwise such an error before the
    turn started refuses the prompt. ``waiting``: the approval and input requests that
    already wait (from the pod's status), asked first. ``model``: the ``--model`` given,
    said not to apply when the pod runs on the scripted provider.
    """
    from cli.approval_prompt import TerminalApprover
    from cli.elicitation_prompt import TerminalElicitor

    async def answer(method: str, params: dict[str, Any]) -> None:
        await client.send(method, params, id=APPROVAL_ID)

    async def answer_input(method: str, params: dict[str, Any]) -> None:
        await client.send(method, params, id=ELICITATION_ID)

    printer = Printer(sys.stdout, sys.stderr)
    approver = TerminalApprover(answer)
    elicitor = TerminalElicitor(answer_input, terminal=approver.terminal)
    started = following
    warned = False
    try:
        for kind, data in waiting or []:
            await (approver if kind == "approval" else elicitor).request(data)
        async for event in client.events():
            data = event.data
            if event.event == "status" and not warned and not json_out:
                # The pod's first status (sent on connecting) says what its config ignored.
                warned = True
                warnings = list(data.get("config_warnings") or [])
                if model is not None and data.get("provider") == "scripted":
                    from cli.commands.serve import scripted_ignores_model

                    warnings.append(scripted_ignores_model(model))
                for warning in warnings:
                    sys.stderr.write(visible(f"pod: warning: {warning}") + "\n")
            if json_out:
                sys.stdout.write(json.dumps({"event": event.event, "data": data}) + "\n")
                sys.stdout.flush()
            if event.event == "error" and data.get("id") in ("run", None) and not started:
                if data["code"] == "already_running" and data.get("id") == "run":
                    raise CliError(f"{ALREADY_RUNNING_HINT} ({data['message']})")
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
            if event.event == "alert" and data.get("source") == "budget":
                printer.budget_said = str(data.get("message", ""))
            if event.event in ("run_end", "shutdown"):
                result = str(data["result"]) if event.event == "run_end" else "cancelled"
                if result == "paused" and data.get("pause_reason") == "budget":
                    result = "budget"  # exit 6, with the pod's sentence
                if not json_out:
                    printer.end(result)
                return result
            if not json_out:
                printer.event(event.event, data)
    finally:
        await approver.close()
        await elicitor.close()
    raise ConnectionLost("the pod closed the connection before the run ended")


class ConnectionLost(CliError):
    """The pod's connection closed before the turn ended (the pod stopped, or dropped this
    client)."""
