"""What a server asks of the pod while one of its tools is called: the pod's model
(``sampling/createMessage``) and a person (``elicitation/create``).

One :class:`ServerAsking` per server routes both. It knows the pod's requests in flight to
the server (a request is answered only during one) and which tools are being called (so a
request for input names the call it came during), and it runs each answer as a task of its
own, so that an interrupted call withdraws what was asked for it. Who answers is
:class:`~.sampling.PodSampler` and :class:`~.elicitation.PodAsker`, set by the pod; outside a
pod (``pod mcp ls``) nobody is, and each request is declined saying so.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from mcp import types

from orchestrator.adapters.mcp.client_side import Alert, declined
from orchestrator.adapters.mcp.elicitation import InputDeclined, PodAsker
from orchestrator.adapters.mcp.sampling import PodSampler, settle
from orchestrator.config.mcp import wire_name

__all__ = ["ServerAsking"]

_CALLING_TOOL: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "mcp_calling_tool", default=None
)
"""The tool the current task calls (set for the length of one call, see
:meth:`ServerAsking.calling`)."""


@dataclass
class ServerAsking:
    """The requests one server sends the pod during its calls, and who answers them."""

    server: str
    """The server's name, as people and the model know it."""
    alert: Alert
    """Tells people of a request declined without asking them."""
    sampler: PodSampler | None = None
    """The pod's model, lent through a person's approval (``sampling = "ask"``)."""
    asker: PodAsker | None = None
    """The people at the pod's clients, asked for input (``elicitation = "ask"``)."""
    _calls: int = 0
    """Requests of the pod's in flight (a sampling request is answered only during one)."""
    _asking: set[asyncio.Task[Any]] = field(default_factory=set)
    """Sampling requests and requests for input being answered; an interrupted call
    withdraws them."""
    _calling: list[str] = field(default_factory=list)
    """The tools of the server's being called now (a request for input that cannot tell which
    call it came during names the tool only when they are all the same)."""

    @contextlib.contextmanager
    def in_request(self) -> Iterator[None]:
        """For the length of one request of the pod's to the server: the server may ask."""
        self._calls += 1
        try:
            yield
        finally:
            self._calls -= 1

    @contextlib.contextmanager
    def calling(self, tool: str) -> Iterator[None]:
        """For the length of one call of ``tool``: requests for input answered in this task
        (and the tasks it starts) name this call's tool, not another in flight beside it."""
        self._calling.append(tool)
        naming = _CALLING_TOOL.set(tool)
        try:
            yield
        finally:
            _CALLING_TOOL.reset(naming)
            self._calling.remove(tool)

    def withdraw(self) -> None:
        """A call was given up on: nobody is asked any more for what its server wanted."""
        for asking in self._asking:
            asking.cancel()

    async def ask_model(
        self, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.ErrorData:
        """Answer a sampling request (the server's entry says ``sampling = "ask"``)."""
        # A task of its own, so that the call it belongs to can withdraw it when interrupted.
        task = asyncio.ensure_future(settle(self.sampler, self.server, params, self._calls > 0))
        self._asking.add(task)
        try:
            return await task
        finally:
            self._asking.discard(task)

    async def ask_person(self, params: types.ElicitRequestParams) -> types.ElicitResult:
        """Answer a request for input: a person's answer, or declined saying why."""
        if self.asker is None or self._calls == 0:
            where = "outside a call of its tools" if self.asker else "outside a pod"
            return self._decline_input(params, f"it came {where}, and nobody is asked there")
        tool = self._asking_tool()
        # A task of its own, so that the call it belongs to can withdraw it when interrupted.
        task = asyncio.ensure_future(self.asker.ask(self.server, params, tool))
        self._asking.add(task)
        try:
            return await task
        except InputDeclined as exc:
            return self._decline_input(params, str(exc), say=not exc.quiet)
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise
            return types.ElicitResult(action="cancel")  # withdrawn with its call
        finally:
            self._asking.discard(task)

    def _asking_tool(self) -> str | None:
        """The tool whose call a request for input came during, by its wire name; None when
        that is not known.

        A request that rides the call's own result (``InputRequiredResult``) is answered in the
        call's task, which knows its tool. One sent on its own (older protocols) is answered
        apart from any call: with several calls of different tools in flight, it names none
        rather than the wrong one.
        """
        tool = _CALLING_TOOL.get()
        if tool is None and len(set(self._calling)) == 1:
            tool = self._calling[0]
        return wire_name(self.server, tool) if tool is not None else None

    def _decline_input(
        self, params: types.ElicitRequestParams, why: str, *, say: bool = True
    ) -> types.ElicitResult:
        reply = declined(why)
        if say:  # else said already for this burst: a flood of alerts is a flood of events
            self.alert(
                "info",
                f"MCP server {self.server} asked for input: {params.message!r}; {reply.why}",
            )
        return reply.result
