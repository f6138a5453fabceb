"""The pod's todo list as ACP's own plan: a ``plan`` session update with one entry per item.

ACP's plan is replaced whole by each update, as ``todo_write`` replaces the list, so every
``todos`` event (and the list a session opens with) becomes one ``AgentPlanUpdate`` with the
whole list; an emptied list is an update with no entries, which clears the editor's plan.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from acp import schema

from orchestrator.protocol import TodoData

__all__ = ["plan_update"]


def plan_update(todos: Iterable[TodoData | dict[str, Any]]) -> schema.AgentPlanUpdate:
    """The list as ACP plan entries (our items carry no priority: each is ``medium``)."""
    items = [t if isinstance(t, TodoData) else TodoData.model_validate(t) for t in todos]
    return schema.AgentPlanUpdate(
        session_update="plan",
        entries=[
            schema.PlanEntry(content=item.content, priority="medium", status=item.status)
            for item in items
        ],
    )
