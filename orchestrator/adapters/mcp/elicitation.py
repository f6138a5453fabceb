"""Elicitation put to a person: an MCP server asks for input, and one of the pod's clients
answers (``[mcp] elicitation = "ask"``, the default).

A request that comes during a call of one of the server's tools waits in the pod's
:class:`~orchestrator.adapters.mcp.elicitations.Elicitations` (the machine's ``awaiting_input``) until a
client answers it. One outside a call, or in a process that is not a pod (``pod mcp ls``), is
declined, saying why; so is a form whose schema MCP does not allow. An interrupt of the call
withdraws the request, and the server is told ``cancel``.

A server asks one thing at a time: while one of its requests waits for a person, the others it
sends are declined at once, saying so (and said to the clients once per wait, not once each). A
server that sent two thousand requests together would otherwise keep hundreds waiting, each
with a form for the clients, and the pod busy with them.

What is asked of the pod is only :class:`InputHost`: its state, its desk of requests for input
and its machine's signal. The pod's controller is one (structurally: nothing here imports it,
so the adapters stay below the runtime).
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from mcp import types

from orchestrator.adapters.mcp.forms import FormError
from orchestrator.protocol import ElicitationRequestData
from states.queries import TOOLS_RUN

__all__ = [
    "InputAnswerLike",
    "InputDeclined",
    "InputDesk",
    "InputHost",
    "PodAsker",
    "request_data",
]

log = logging.getLogger(__name__)


class InputAnswerLike(Protocol):
    """A person's answer to a request for input, as the desk hands it back."""

    @property
    def action(self) -> Literal["accept", "decline", "cancel"]:
        """What the person did with the request."""
        ...

    @property
    def content(self) -> dict[str, Any] | None:
        """The form's fields (accept of a form only)."""
        ...


class InputDesk(Protocol):
    """Where requests for input wait for a person (the runtime's ``Elicitations``)."""

    async def ask(
        self, data: ElicitationRequestData, *, signal: Callable[[str], None]
    ) -> InputAnswerLike:
        """Wait for the answer (cancellation withdraws the request); raises FormError for a
        form MCP does not allow."""
        ...


class InputHost(Protocol):
    """What :class:`PodAsker` needs of the pod: the pod's controller satisfies it."""

    @property
    def state_id(self) -> str:
        """The machine's innermost active state."""
        ...

    @property
    def elicitations(self) -> InputDesk:
        """The pod's waiting requests for input."""
        ...

    def signal(self, event: str) -> None:
        """Send the machine an event (``input_needed``, ``input_settled``)."""
        ...


class InputDeclined(Exception):
    """Why a request for input is declined without asking anyone, in words for the server.

    A signal, not a failure: a decline is a valid MCP answer the server gets back, so it stays
    outside the error tree (a handler of failures would log or report it as one)."""

    def __init__(self, why: str, *, quiet: bool = False) -> None:
        super().__init__(why)
        self.quiet = quiet
        """Already said to the clients (the same reason, for the same wait): log it only."""


def request_data(
    server: str, params: types.ElicitRequestParams, tool: str | None
) -> ElicitationRequestData:
    """The ``elicitation_request`` clients are sent for one request (a fresh id)."""
    input_id = f"input_{secrets.token_hex(8)}"
    if isinstance(params, types.ElicitRequestURLParams):
        return ElicitationRequestData(
            id=input_id,
            server=server,
            message=params.message,
            tool=tool,
            mode="url",
            url=params.url,
        )
    return ElicitationRequestData(
        id=input_id,
        server=server,
        message=params.message,
        tool=tool,
        mode="form",
        schema=params.requested_schema,
    )


@dataclass
class PodAsker:
    """Requests for input put to the people at the pod's clients."""

    pod: InputHost
    _waiting: set[str] = field(default_factory=set)
    """The servers with a request waiting for a person (one each at most)."""
    _turned_away: dict[str, int] = field(default_factory=dict)
    """Per server, its requests declined while one of its waits."""

    async def ask(
        self, server: str, params: types.ElicitRequestParams, tool: str | None
    ) -> types.ElicitResult:
        """Wait for a person's answer; raises InputDeclined when nobody is to be asked (the
        pod is not running a tool, or another request of this server waits)."""
        c = self.pod
        if c.state_id not in TOOLS_RUN:  # a request for input is put to a person only there
            raise InputDeclined(f"it came while the pod was {c.state_id}, not running a tool")
        if server in self._waiting:
            turned = self._turned_away[server] = self._turned_away.get(server, 0) + 1
            raise InputDeclined(
                "another request of this server waits for a person's answer, and a server "
                "asks one thing at a time; ask again once it is answered",
                quiet=turned > 1,
            )
        data = request_data(server, params, tool)
        self._waiting.add(server)
        try:
            answer = await c.elicitations.ask(data, signal=c.signal)
        except FormError as exc:
            raise InputDeclined(f"its form cannot be shown to a person: {exc}") from exc
        finally:
            self._waiting.discard(server)
            turned = self._turned_away.pop(server, 0)
            if turned:
                log.info(
                    "MCP server %s sent %d more requests for input while one waited; "
                    "declined at once",
                    server,
                    turned,
                )
        log.info("MCP server %s asked for input (%s): %s", server, params.message, answer.action)
        return types.ElicitResult(action=answer.action, content=answer.content)
