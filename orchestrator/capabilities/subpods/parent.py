"""What the sub-pods need of their parent pod, as small Protocols the runtime's own classes
meet (``Approvals``, ``Elicitations``, their answers): the sub-pods never import the runtime
that drives them; ``orchestrator/serving/pod/assemble.py`` links the two.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from pydantic import BaseModel

from orchestrator.core.budget import BudgetCaps
from orchestrator.protocol import ApprovalRequestData, ElicitationRequestData

__all__ = ["ApprovalAsker", "InputAsker", "ParentLinks", "RelayedAnswer", "RelayedInput"]


class RelayedAnswer(Protocol):
    """What the parent's person answered an approval a child relayed up (the runtime's
    ``Answer``)."""

    @property
    def allow(self) -> bool: ...
    @property
    def scope(self) -> Literal["once", "session"]: ...
    @property
    def message(self) -> str: ...


class RelayedInput(Protocol):
    """What the parent's person answered a child's request for input (the runtime's
    ``InputAnswer``)."""

    @property
    def action(self) -> str: ...
    @property
    def content(self) -> dict[str, Any] | None: ...


class ApprovalAsker(Protocol):
    """The parent's approvals (the runtime's ``Approvals``): a child's request relayed to the
    parent's clients, waited for under the parent's round events."""

    def relay(
        self, data: ApprovalRequestData, *, signal: Callable[[str], None]
    ) -> Awaitable[RelayedAnswer]: ...


class InputAsker(Protocol):
    """The parent's requests for input (the runtime's ``Elicitations``)."""

    def ask(
        self, data: ElicitationRequestData, *, signal: Callable[[str], None]
    ) -> Awaitable[RelayedInput]: ...


@dataclass(slots=True, kw_only=True)
class ParentLinks:
    """What the children need of their parent pod (set once the controller exists)."""

    record: Callable[[BaseModel], Awaitable[None]]
    """Write and sync a session record (the child's write-ahead link)."""
    emit: Callable[[str, BaseModel], None]
    alert: Callable[[str, str, str], None]
    approvals: ApprovalAsker
    elicitations: InputAsker
    signal: Callable[[str], None]
    """Round events for the parent's machine (``approval_needed`` / ``approval_settled``,
    ``input_needed`` / ``input_settled``)."""
    offered: Callable[[], list[str]]
    """The tools the parent's model is offered now."""
    budget: Callable[[], BudgetCaps] = BudgetCaps
    """What a child may spend now: the parent's remaining budget (docs/budgets.md)."""
    spent: Callable[[float, str], None] = lambda dollars, source: None
    """Count dollars a child spent as the parent's (its turn's and session's), kept in the
    parent's session."""
    budget_paused: Callable[[str], bool] = lambda child: False
    """A child stopped at the budget passed to it: pause the parent's turn for the budget
    (False: the parent has no cap now, the child goes on without one)."""
