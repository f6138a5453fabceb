"""``pod run``'s answer to an approval request: ask on the terminal, or deny when none.

A run started from a script or a pipe has nobody to ask, and waiting would hang it until its
timeout, so it denies at once with a message that tells the model (and the person reading the
transcript later) why, and how to allow such calls. On a terminal the request is printed on
stderr (the command, or the diff of an edit) and one line of input answers it. Requests are
asked one at a time; one that another client answers first is dropped from the queue, or its
question is withdrawn.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TextIO

NOT_INTERACTIVE = (
    "pod run is not interactive; allow such calls with --permission-mode (accept-edits, "
    "yolo) or an allow rule in [permissions]"
)
"""The denial message for a run with no terminal to ask on (the model reads it)."""

CHOICES = "[y]es once, [a]lways this session, [n]o"

Send = Callable[[str, dict[str, Any]], Awaitable[None]]
"""Sends one request to the pod: ``(method, params)``."""


@dataclass(frozen=True)
class Answer:
    """What a typed line means: approve once or for the session, or deny with a message."""

    method: str
    params: dict[str, Any]


def parse_answer(call_id: str, line: str) -> Answer | None:
    """The answer a typed line gives; None when the line means nothing (ask again).

    ``n`` may carry the reason after it (``n use the other file``), which the model reads.
    """
    text = line.strip()
    word, _, rest = text.partition(" ")
    word = word.lower()
    if word in ("y", "yes"):
        return Answer("approve", {"id": call_id, "scope": "once"})
    if word in ("a", "always"):
        return Answer("approve", {"id": call_id, "scope": "session"})
    if word in ("n", "no"):
        params: dict[str, Any] = {"id": call_id}
        if rest.strip():
            params["message"] = rest.strip()
        return Answer("deny", params)
    return None


def describe(request: dict[str, Any]) -> str:
    """The lines a person needs to decide: tool, what it would do, why it asks, the diff."""
    lines = [f"? {request['tool']}: {request['summary']}"]
    if request.get("reason"):
        lines.append(f"  ({request['reason']})")
    if request.get("diff"):
        lines.extend("  " + row for row in str(request["diff"]).splitlines())
    return "\n".join(lines)


@dataclass
class TerminalApprover:
    """Answers the approval requests of one ``pod run``."""

    send: Send
    err: TextIO = field(default_factory=lambda: sys.stderr)
    interactive: bool = field(default_factory=lambda: sys.stdin.isatty())
    stdin_fd: int = field(default_factory=lambda: sys.stdin.fileno())
    _waiting: dict[str, dict[str, Any]] = field(default_factory=dict)
    _asking: str | None = None
    _worker: asyncio.Task[None] | None = None

    async def request(self, data: dict[str, Any]) -> None:
        """An ``approval_request`` arrived: deny it now, or queue it for the terminal."""
        if not self.interactive:
            self.err.write(f"{describe(data)}\n  ✗ denied: pod run is not interactive\n")
            self.err.flush()
            await self.send("deny", {"id": data["id"], "message": NOT_INTERACTIVE, "asked": False})
            return
        self._waiting[str(data["id"])] = data
        if self._worker is None or self._worker.done():
            self._worker = asyncio.create_task(self._ask_all())

    def resolved(self, data: dict[str, Any]) -> None:
        """An ``approval_resolved`` arrived: forget the request (maybe answered elsewhere)."""
        call_id = str(data["id"])
        self._waiting.pop(call_id, None)
        if self._asking == call_id and self._worker is not None:
            self._worker.cancel()
            self.err.write(f"\n  (answered elsewhere: {data['decision']})\n")
            self.err.flush()

    async def close(self) -> None:
        """The run ended: stop asking."""
        if self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker

    async def _ask_all(self) -> None:
        while self._waiting:
            call_id, request = next(iter(self._waiting.items()))
            self._asking = call_id
            try:
                answer = await self._ask(call_id, request)
            except asyncio.CancelledError:
                if call_id in self._waiting:  # the run ended, not answered elsewhere
                    raise
                self._worker = asyncio.create_task(self._ask_all())  # go on with the others
                return
            finally:
                self._asking = None
            self._waiting.pop(call_id, None)
            await self.send(answer.method, answer.params)

    async def _ask(self, call_id: str, request: dict[str, Any]) -> Answer:
        self.err.write(describe(request) + "\n")
        while True:
            self.err.write(f"  Allow? {CHOICES}: ")
            self.err.flush()
            line = await _read_line(self.stdin_fd)
            if line is None:  # end of input: nobody will answer
                return Answer("deny", {"id": call_id, "message": NOT_INTERACTIVE, "asked": False})
            answer = parse_answer(call_id, line)
            if answer is not None:
                return answer


async def _read_line(fd: int) -> str | None:
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
