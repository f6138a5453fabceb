"""Requests for input: an MCP server asks a person something, and waits here for the answer.

Under ``[mcp] elicitation = "ask"``, a server's ``elicitation/create`` during a call of one of
its tools becomes an ``elicitation_request`` to the pod's clients (a form built from its
schema, or a URL to open). The call waits until a client answers with
``answer_elicitation`` (accept with the form's content, decline, or cancel). While any request
waits, the lifecycle machine is in ``awaiting_input`` (or in ``awaiting_approval``, when an
approval waits too): the first request signals ``input_needed``, the last answer
``input_settled``.

An interrupt (pause, cancel, shutdown) withdraws every waiting request with the call it came
during; the server is told ``cancel``. Nothing of a request is kept in the session: after a
crash, the call is closed as interrupted (or, read-only, run again), and its server asks again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel

from orchestrator.adapters.mcp.forms import Form, FormError, check_content, form_fields
from orchestrator.protocol import ElicitationRequestData, ElicitationResolvedData

Emit = Callable[[str, BaseModel], None]
Signal = Callable[[str], None]

Action = Literal["accept", "decline", "cancel"]


@dataclass(frozen=True, slots=True)
class InputAnswer:
    """What a person answered a request for input."""

    action: Action
    content: dict[str, Any] | None = None
    """The form's fields, checked against its schema (accept of a form only)."""


class Elicitations:
    """The waiting requests for input of one pod."""

    def __init__(
        self,
        *,
        emit: Emit,
        on_request: Callable[[ElicitationRequestData], None] | None = None,
    ) -> None:
        self.emit = emit
        self.on_request = on_request
        """Told of each request as it starts to wait (``Notification`` hooks)."""
        self._waiting: dict[
            str, tuple[asyncio.Future[InputAnswer], ElicitationRequestData, Form | None]
        ] = {}
        self._withdrawn: set[str] = set()
        """Requests already said to be withdrawn (their waiters have yet to wake)."""

    def pending(self) -> list[ElicitationRequestData]:
        """The requests waiting for an answer, oldest first (for clients that attach)."""
        return [data for future, data, _ in self._waiting.values() if not future.done()]

    def waiting(self) -> bool:
        """Whether any request waits for a person."""
        return any(not future.done() for future, _, _ in self._waiting.values())

    def waiting_for(self, input_id: str) -> bool:
        """Whether this request waits for an answer (an answered one waits no more)."""
        waiting = self._waiting.get(input_id)
        return waiting is not None and not waiting[0].done()

    def check(self, input_id: str, action: Action, content: dict[str, Any] | None) -> str | None:
        """Why an answer cannot be taken (no such request, a form its schema refuses), in
        words for the client; None when it can."""
        waiting = self._waiting.get(input_id)
        if waiting is None or waiting[0].done():
            names = ", ".join(i for i in self._waiting if self.waiting_for(i)) or "none"
            return f"no request for input {input_id!r} is waiting (waiting: {names})"
        form = waiting[2]
        if action != "accept" or form is None:
            return None
        try:
            check_content(form, content or {})
        except FormError as exc:
            return f"the answer does not fit the form: {exc}"
        return None

    async def ask(self, data: ElicitationRequestData, *, signal: Signal) -> InputAnswer:
        """Wait for a person's answer (cancellation withdraws the request); raises FormError,
        before asking anyone, for a form schema MCP does not allow."""
        form = form_fields(data.schema_ or {}) if data.mode == "form" else None
        future: asyncio.Future[InputAnswer] = asyncio.get_running_loop().create_future()
        first = not self._waiting
        self._waiting[data.id] = (future, data, form)
        if first:
            signal("input_needed")
        self.emit("elicitation_request", data)
        if self.on_request is not None:
            self.on_request(data)
        action: Literal["accept", "decline", "cancel", "withdrawn"] = "withdrawn"
        try:
            answer = await future
            action = answer.action
            return answer
        finally:
            del self._waiting[data.id]
            if data.id in self._withdrawn:
                self._withdrawn.discard(data.id)
            else:
                self.emit(
                    "elicitation_resolved", ElicitationResolvedData(id=data.id, action=action)
                )
            if not self._waiting:
                signal("input_settled")

    def withdraw_all(self) -> None:
        """An interrupt: every waiting request is over, and said to be at once (its waiter,
        a task of the MCP server's, wakes later; the turn may end before it does)."""
        for input_id, (future, _, _) in self._waiting.items():
            if not future.done():
                future.cancel()
                self._withdrawn.add(input_id)
                self.emit(
                    "elicitation_resolved",
                    ElicitationResolvedData(id=input_id, action="withdrawn"),
                )

    def answer(self, input_id: str, action: Action, content: dict[str, Any] | None) -> None:
        """A person's answer; only the first that settles a request counts, and a form's
        content is kept as its schema types it (the caller checked it with :meth:`check`)."""
        waiting = self._waiting.get(input_id)
        if waiting is None or waiting[0].done():
            return
        future, _, form = waiting
        if action == "accept" and form is not None:
            try:
                content = check_content(form, content or {})
            except FormError:
                return  # refused by check(); an answer that slipped past it settles nothing
        future.set_result(InputAnswer(action, content if action == "accept" else None))
