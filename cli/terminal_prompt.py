"""What ``pod run``'s questions to a person share: a queue asked one request at a time on the
terminal, or answered at once when there is no terminal.

:class:`TerminalQueue` holds the requests that wait (approvals, requests for input), asks the
oldest, sends the answer, and drops a request that another client answered first (ending its
question when it is the one being asked). What is asked, and what is answered without a
terminal, is the subclass's (:mod:`cli.approval_prompt`, :mod:`cli.elicitation_prompt`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TextIO

Send = Callable[[str, dict[str, Any]], Awaitable[None]]
"""Sends one request to the pod: ``(method, params)``."""


@dataclass(frozen=True)
class Answer:
    """What a person answered: the method to send and its params."""

    method: str
    params: dict[str, Any]


@dataclass
class TerminalQueue:
    """Asks the requests of one kind on the terminal, oldest first; without one, answers each
    at once with :meth:`unasked`."""

    send: Send
    err: TextIO = field(default_factory=lambda: sys.stderr)
    interactive: bool = field(default_factory=lambda: sys.stdin.isatty())
    stdin_fd: int = field(default_factory=lambda: sys.stdin.fileno())
    terminal: asyncio.Lock = field(default_factory=asyncio.Lock)
    """Held while a question is asked: queues that share the terminal share it, so an
    approval and a request for input waiting at once are asked one after the other (two
    readers of one stdin would each get half the lines)."""
    _waiting: dict[str, dict[str, Any]] = field(default_factory=dict)
    _asking: str | None = None
    _worker: asyncio.Task[None] | None = None

    async def request(self, data: dict[str, Any]) -> None:
        """A request arrived: answer it now (no terminal), or queue it for the terminal."""
        if not self.interactive:
            answer = self.unasked(data)
            await self.send(answer.method, answer.params)
            return
        self._waiting[str(data["id"])] = data
        if self._worker is None or self._worker.done():
            self._worker = asyncio.create_task(self._ask_all())

    def resolved(self, request_id: str, note: str) -> None:
        """A request is over (maybe answered elsewhere): forget it; when it is being asked,
        stop asking and print ``note`` in its place."""
        self._waiting.pop(request_id, None)
        if self._asking == request_id and self._worker is not None:
            self._worker.cancel()
            self.err.write(f"\n  ({note})\n")
            self.err.flush()

    async def close(self) -> None:
        """The run ended: stop asking."""
        if self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker

    def unasked(self, data: dict[str, Any]) -> Answer:
        """The answer when nobody can be asked (no terminal, or its input ended); it may say
        so on :attr:`err` too."""
        raise NotImplementedError

    async def ask(self, data: dict[str, Any]) -> Answer:
        """Ask a person on the terminal for the answer to one request."""
        raise NotImplementedError

    async def read_line(self, prompt: str) -> str | None:
        """Write ``prompt`` and read the typed line; None at end of input."""
        self.err.write(prompt)
        self.err.flush()
        return await read_line(self.stdin_fd)

    async def _ask_all(self) -> None:
        while self._waiting:
            async with self.terminal:
                if not self._waiting:  # answered elsewhere while the other queue asked
                    return
                request_id, data = next(iter(self._waiting.items()))
                self._asking = request_id
                try:
                    answer = await self.ask(data)
                except asyncio.CancelledError:
                    if request_id in self._waiting:  # the run ended, not answered elsewhere
                        raise
                    self._worker = asyncio.create_task(self._ask_all())  # on with the others
                    return
                finally:
                    self._asking = None
            self._waiting.pop(request_id, None)
            await self.send(answer.method, answer.params)


async def read_line(fd: int) -> str | None:
    """One line from a terminal without a thread (a thread blocked on stdin would keep the
    process alive after the run ends); None at end of input."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[bytes] = loop.create_future()

    def readable() -> None:
        if not done.done():
            try:
                done.set_result(os.read(fd, 4096))
            except OSError as exc:
                done.set_exception(exc)

    loop.add_reader(fd, readable)
    try:
        data = await done
    finally:
        loop.remove_reader(fd)
    return data.decode(errors="replace") if data else None
