"""Approvals: a tool call that must be approved waits here until a person answers.

The runner asks :meth:`Approvals.ask` for each call the policy marks ``ask``; the call does not
start until a client answers with ``approve`` (once, or always for this session) or ``deny``
(optionally with a message for the model). While any call waits, the lifecycle machine is in
``awaiting_approval``: the first request signals ``approval_needed``, the last answer
``approval_settled``. Calls of the same round that need no approval run meanwhile.

An interrupt (pause, cancel, shutdown) withdraws every waiting request; the calls never
started, so Resume asks again and a new turn closes them like any unanswered call.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel

from orchestrator.capabilities.permissions import Policy, Rule, ToolKind
from orchestrator.capabilities.permissions.web import WEB_FETCH
from orchestrator.core.history import ToolUseBlock
from orchestrator.core.web_targets import host_of
from orchestrator.protocol import ApprovalRequestData, ApprovalResolvedData

Emit = Callable[[str, BaseModel], None]
Signal = Callable[[str], None]

SUMMARY_CHARS = 200


@dataclass(frozen=True, slots=True)
class Answer:
    """What a person answered."""

    allow: bool
    scope: Literal["once", "session"] = "once"
    message: str = ""
    asked: bool = True
    """False: nobody was asked (a client with no person to ask refused for them)."""


def describe(call: ToolUseBlock) -> str:
    """A one-line human summary of what a call would do."""
    command, url = call.input.get("command"), call.input.get("url")
    if call.name == WEB_FETCH and isinstance(url, str):
        # The domain first: it is what "always" allows, and a long URL is cut at the end.
        text = f"fetch from {host_of(url) or 'an invalid URL'}: {' '.join(url.split())}"
    elif isinstance(command, str):
        text = f"run: {' '.join(command.split())}"
    elif isinstance(call.input.get("path"), str):
        text = f"{call.name} {call.input['path']}"
    else:
        text = f"{call.name} {json.dumps(call.input, ensure_ascii=False)}"
    return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1] + "…"


class Approvals:
    """The waiting approval requests of one pod."""

    def __init__(
        self,
        *,
        policy: Policy,
        emit: Emit,
        on_request: Callable[[ApprovalRequestData], None] | None = None,
        on_grant: Callable[[Rule, str], None] | None = None,
    ) -> None:
        self.policy = policy
        self.emit = emit
        self.on_request = on_request
        """Told of each request as it starts to wait (``Notification`` hooks)."""
        self.on_grant = on_grant
        """Told of each "always" rule and the call it came from (the pod records it in the
        session, so it outlives an unload)."""
        self._waiting: dict[str, tuple[asyncio.Future[Answer], ApprovalRequestData]] = {}

    def pending(self) -> list[ApprovalRequestData]:
        """The requests waiting for an answer, oldest first (for clients that attach)."""
        return [data for _, data in self._waiting.values()]

    def waiting_for(self, call_id: str) -> bool:
        """Whether a request for this call waits for an answer (an answered one waits no more,
        even before its caller has resumed)."""
        waiting = self._waiting.get(call_id)
        return waiting is not None and not waiting[0].done()

    async def ask(
        self,
        call: ToolUseBlock,
        *,
        kind: ToolKind,
        reason: str,
        diff: str | None,
        signal: Signal,
    ) -> Answer:
        """Wait for a person's answer about ``call`` (cancellation withdraws the request)."""
        data = ApprovalRequestData(
            id=call.id,
            tool=call.name,
            kind=kind,
            arguments=call.input,
            summary=describe(call),
            reason=reason,
            diff=diff,
        )
        return await self.relay(data, signal=signal)

    async def relay(self, data: ApprovalRequestData, *, signal: Signal) -> Answer:
        """Wait for a person's answer to a request (a child pod's, relayed with ``pod`` set,
        this pod's own, or a sandboxed call's to keep what it planted, with ``held`` set);
        cancellation withdraws it."""
        future: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        first = not self._waiting
        self._waiting[data.id] = (future, data)
        if first:
            signal("approval_needed")
        self.emit("approval_request", data)
        if self.on_request is not None:
            self.on_request(data)
        decision: Literal["approved", "denied", "withdrawn"] = "withdrawn"
        try:
            answer = await future
            decision = "approved" if answer.allow else "denied"
            return answer
        finally:
            del self._waiting[data.id]
            self.emit("approval_resolved", ApprovalResolvedData(id=data.id, decision=decision))
            if not self._waiting:
                signal("approval_settled")

    def answer(self, call_id: str, answer: Answer) -> None:
        """A person's answer; "always" also allows calls like this one from now on.

        Only the answer that settles the request counts: a second one (two clients, or two
        lines of one write) changes nothing, and grants nothing.
        """
        waiting = self._waiting.get(call_id)
        if waiting is None or waiting[0].done():
            return
        future, data = waiting
        if answer.allow and answer.scope == "session" and data.pod is None and data.held is None:
            # A child's "always" is granted by the child, in its own rules, not here; keeping
            # what a command planted grants nothing for later commands.
            rule = self.policy.grant(data.tool, data.arguments)
            if self.on_grant is not None:
                self.on_grant(rule, call_id)
        future.set_result(answer)

    def unknown(self, call_id: str) -> str:
        """Why an answer names no waiting request, in words for the client."""
        waiting = ", ".join(i for i in self._waiting if self.waiting_for(i)) or "none"
        return f"no approval is waiting for tool call {call_id!r} (waiting: {waiting})"
