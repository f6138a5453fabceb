"""The editor's files, served by a client of the pod (``offer_client_io``).

The pod's file tools (:mod:`orchestrator.capabilities.tools.client_files`) ask through
:class:`ClientIo`, which sends a ``client_io_request`` event to the client that offered (that
client only: it carries file contents, and only it can answer) and waits for its
``client_io_result``. Whatever goes wrong falls back to the pod's own reading and writing:

- the client answers ``ok: false``: this call falls back (the first time, an alert says so);
- the client does not answer within :data:`ANSWER_TIMEOUT_S`, or goes away: the offer is
  dropped, every waiting request falls back, and an alert says the pod reads and writes the
  files itself from now on (a client offers again by sending ``offer_client_io``);
- the call is paused or cancelled while it waits: the wait ends with the call; an answer
  that comes later is dropped.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from orchestrator.capabilities.tools.client_files import TerminalRun
from orchestrator.protocol import ClientIoRequestData, ClientIoResultParams, encode_event

__all__ = ["ANSWER_TIMEOUT_S", "ClientIo"]

ANSWER_TIMEOUT_S = 30.0
"""How long a file request waits for the client before the pod does it itself."""

KILLED_ANSWER_S = 10.0
"""How long a pause waits for the editor to say what a command it killed had printed: an
editor that does not answer delays the pause by this much at most, and costs the output."""

Reply = Callable[[bytes], None]
Alert = Callable[[str, str, str], None]


class ClientIo:
    """The client that serves the editor's files, and the requests waiting for it."""

    def __init__(self, alert: Alert) -> None:
        self._alert = alert
        self._reply: Reply | None = None
        self._terminal: Reply | None = None
        self._waiting: dict[str, asyncio.Future[ClientIoResultParams]] = {}
        self._ids = itertools.count(1)
        self._told_refusal = False

    @property
    def serving(self) -> bool:
        """Whether a client serves the editor's files now."""
        return self._reply is not None

    @property
    def serving_terminal(self) -> bool:
        """Whether a client serves the editor's terminal now."""
        return self._terminal is not None

    def offer(self, reply: Reply, files: bool, terminal: bool = False) -> None:
        """A client offers (or withdraws) the editor's files and terminal; the latest offer
        wins."""
        self._reply = reply if files else None
        self._terminal = reply if terminal else None
        self._told_refusal = False
        self._drop_waiting()

    async def run_command(
        self,
        argv: list[str],
        cwd: Path,
        timeout_s: float,
        output_limit: int,
        call_id: str,
        on_interrupt: Callable[[str], None] | None = None,
    ) -> TerminalRun:
        """Run a command in the editor's terminal and say how it ended (see
        :class:`~orchestrator.capabilities.tools.client_files.ClientTerminal`)."""
        reply = self._terminal
        if reply is None:
            return TerminalRun(done=False, started=False, message="no terminal is offered")
        request_id = f"io_{next(self._ids)}"
        waiting: asyncio.Future[ClientIoResultParams] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = waiting
        run = ClientIoRequestData(
            id=request_id,
            op="run_command",
            argv=argv,
            cwd=str(cwd),
            timeout_s=timeout_s,
            output_byte_limit=output_limit,
            call_id=call_id,
        )
        kill = ClientIoRequestData(id=request_id, op="kill_command", call_id=call_id)
        try:
            reply(encode_event("client_io_request", run))
            async with asyncio.timeout(timeout_s + ANSWER_TIMEOUT_S):
                # Shielded: an interrupt cancels this wait, not the answer still to come
                # (the output up to the kill).
                result = await asyncio.shield(waiting)
        except TimeoutError:
            reply(encode_event("client_io_request", kill))
            if self._terminal is reply:
                self._terminal = None
                self._alert(
                    "warn",
                    "client_io",
                    "the editor's terminal did not say how a command ended: the pod runs "
                    "commands itself from now on",
                )
            return TerminalRun(
                done=False,
                started=True,
                message="the editor's terminal did not say how the command ended (it was "
                "told to kill it)",
            )
        except asyncio.CancelledError:
            # Paused or cancelled: the command is killed where it runs, and the editor's
            # answer (the output up to the kill) is waited for, within a ceiling, so the
            # interrupted result says what it did; the call ends then.
            reply(encode_event("client_io_request", kill))
            if on_interrupt is not None:
                await _output_after_kill(waiting, on_interrupt)
            raise
        finally:
            self._waiting.pop(request_id, None)
        if not result.ok:
            return TerminalRun(done=False, started=result.started, message=result.message)
        return TerminalRun(
            done=True,
            started=True,
            output=result.content or "",
            exit_code=result.exit_code,
            signal=result.signal,
            timed_out=result.timed_out,
            truncated=result.truncated,
        )

    def answer(self, params: ClientIoResultParams) -> str | None:
        """A client's ``client_io_result``; why it is refused (None: taken)."""
        waiting = self._waiting.get(params.id)
        if waiting is None:
            return f"no file request {params.id!r} is waiting (answered, or over)"
        if not waiting.done():
            waiting.set_result(params)
        return None

    async def read_text(self, path: Path, call_id: str) -> str | None:
        """The editor's text of ``path``, or None (the pod reads the disk)."""
        result = await self._ask("read_text_file", path, None, call_id)
        if result is None or not result.ok or result.content is None:
            return None
        return result.content

    async def write_text(self, path: Path, content: str, call_id: str) -> bool:
        """Whether the editor says it wrote ``content`` to ``path``."""
        result = await self._ask("write_text_file", path, content, call_id)
        return result is not None and result.ok

    async def _ask(
        self, op: Any, path: Path, content: str | None, call_id: str
    ) -> ClientIoResultParams | None:
        reply = self._reply
        if reply is None:
            return None
        request_id = f"io_{next(self._ids)}"
        waiting: asyncio.Future[ClientIoResultParams] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = waiting
        data = ClientIoRequestData(
            id=request_id, op=op, path=str(path), content=content, call_id=call_id
        )
        try:
            reply(encode_event("client_io_request", data))
            async with asyncio.timeout(ANSWER_TIMEOUT_S):
                result = await waiting
        except TimeoutError:
            if self._reply is reply:
                self._reply = None
                self._drop_waiting()
                self._alert(
                    "warn",
                    "client_io",
                    f"the editor did not answer a file request in {ANSWER_TIMEOUT_S:.0f} s: "
                    "the pod reads and writes the files itself from now on",
                )
            return None
        finally:
            # Paused or cancelled while waiting: the wait ends with the call, and an answer
            # that comes later finds nothing waiting (it is dropped).
            self._waiting.pop(request_id, None)
        if not result.ok and not self._told_refusal:
            self._told_refusal = True
            self._alert(
                "warn",
                "client_io",
                f"the editor could not {op.replace('_', ' ')} {path} ({result.message or 'no reason given'}): "
                "the pod did it itself",
            )
        return result

    def _drop_waiting(self) -> None:
        """End every wait with "not done" (the offer changed): the tools fall back."""
        for waiting in self._waiting.values():
            if not waiting.done():
                # "started": a command that may be running is never run again by the pod.
                waiting.set_result(
                    ClientIoResultParams(id="-", ok=False, started=True, message="withdrawn")
                )
        self._waiting.clear()


async def _output_after_kill(
    waiting: asyncio.Future[ClientIoResultParams], on_interrupt: Callable[[str], None]
) -> None:
    """Give ``on_interrupt`` what the killed command printed, once the editor answers; an
    editor that does not answer in time leaves it without. The caller re-raises its
    cancellation after this returns."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + KILLED_ANSWER_S
    while not waiting.done():
        try:
            await asyncio.wait_for(asyncio.shield(waiting), max(0.0, deadline - loop.time()))
        except TimeoutError:
            return
        except asyncio.CancelledError:
            # An interrupt cancels every call of the round, and then each again (the tool
            # runner's gather): the wait is bounded by the deadline, not by the cancels.
            if loop.time() >= deadline:
                return
    if waiting.cancelled() or waiting.exception() is not None:
        return
    result = waiting.result()
    if result.ok and result.content:
        on_interrupt(result.content)
