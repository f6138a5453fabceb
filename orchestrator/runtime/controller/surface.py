"""What the pod's other parts ask of the controller besides the machine's actions: its state
and status, spending, commits, round signals, hooks to start and close, an unload's memory,
rewind checks. Each is a line over a feature module."""

from __future__ import annotations

from typing import Any, Literal

from orchestrator.adapters.session import (
    BudgetRecord,
    RewindRestore,
    SpendRecord,
    UnloadRecord,
)
from orchestrator.core.budget import BudgetCaps
from orchestrator.core.history import Item
from orchestrator.core.rewind import RewindPlan
from orchestrator.core.usage import TokenUsage
from orchestrator.protocol import BudgetData, RewindData, StatusData
from orchestrator.runtime.controller import budget, conversation, hooks, prompt, rewind, unload
from orchestrator.runtime.controller.state import ControllerState
from states import leaf_state


class ControllerSurface(ControllerState):
    """The controller's fields, and the calls the pod's other parts make on it."""

    @property
    def state_id(self) -> str:
        """The innermost active state of the machine."""
        return leaf_state(frozenset(self.machine.configuration_values))

    def status_changed(self) -> None:
        """Broadcast ``status`` if it changed."""
        self.board.changed()

    def status_data(self, request_id: Any = None) -> StatusData:
        """The ``status`` event payload."""
        return self.board.data(request_id)

    def budget_data(self) -> BudgetData:
        """The budgets and the spend against them, as ``status`` reports them."""
        return budget.budget_data(self)

    def cost_usd(self) -> float | None:
        """What the session's requests cost, each priced as it was counted; None when the
        pod's model has no price (a sum of unpriced requests would read as free)."""
        if self.config.model_prices(self.provider.model) is None:
            return None
        return self.budget_data().spent_usd

    def pause_reason(self, paused: bool) -> Literal["user", "budget"] | None:
        """Why the pod is paused (None when it is not)."""
        return budget.pause_reason(self, paused)

    def budget_reached(self, next_tokens: int = 0) -> bool:
        """Whether a budget stops the turn before a request of ``next_tokens`` input tokens
        (0: before a response's calls run); says so in an alert when it does."""
        return budget.reached(self, next_tokens)

    def restore_budget(self, record: BudgetRecord) -> None:
        """Take back the budgets a loaded session's ``set_budget`` left."""
        budget.restore_caps(self, record)

    def budget_refusal(self) -> str | None:
        """Why no request may be sent now outside the turn's own (an MCP server's sampling
        request): a budget is reached; None when one may."""
        stop = budget.would_stop(self, session_only=not self.turn_is_open)
        if stop is None:
            return None
        return (
            f"the pod's budget is reached (spent ${stop.spent:.4f} of {stop.cap} ${stop.limit:.4f})"
        )

    def set_budget(self, changes: dict[str, float | None]) -> str | None:
        """Replace the caps named in ``changes`` (``set_budget``; null: no cap); why not,
        when a cap is asked for a model without a price (nothing changes then)."""
        if any(value is not None for value in changes.values()):
            why = budget.unpriced(self)
            if why is not None:
                return why
        budget.set_caps(self, changes)
        return None

    def child_budget(self) -> BudgetCaps:
        """What a child pod may spend now: the least this pod has left under its caps."""
        return budget.child_caps(self)

    def child_spent(self, dollars: float, source: str) -> None:
        """Count dollars a child pod spent as this pod's (its turn's and session's)."""
        conversation.spend_dollars(self, dollars, source)

    def child_budget_paused(self, child: str) -> bool:
        """A child stopped at the budget passed down: pause this turn for the budget (False:
        this pod has no cap now, so nothing pauses)."""
        budget.child_stopped(self, child)
        if self.budget_stop is None:
            return False
        self.machine.send("pause")
        return True

    def spend(self, usage: TokenUsage, source: str) -> None:
        """Count tokens the pod's key spent outside the conversation's own requests (an MCP
        server's sampling request) as the turn's, kept in the session file."""
        conversation.spend(self, usage, source)

    def count_spent(self, spends: list[SpendRecord]) -> None:
        """Add what a loaded session's ``spend`` records say (a paused turn's to its turn)."""
        conversation.count_spent(self, spends)

    def commit(self, item: Item) -> Item:
        """Commit through the transcript: on disk, then in history, then announced."""
        return conversation.commit(self, item)

    def signal(self, event: str) -> None:
        """A round event (from the turn loop, or a call waiting for a person)."""
        self.machine.send(event)

    def request_turn(self, request_id: str) -> int | None:
        """The turn a ``run`` with this client request id is in (None: no such run)."""
        return prompt.request_turn(self, request_id)

    def start_session_hooks(self, source: str) -> None:
        """Run the ``SessionStart`` hooks while the pod serves; the first turn waits."""
        hooks.start_session_hooks(self, source)

    async def close_hooks(self) -> None:
        """End hook commands still running with nobody waiting for them (the pod stops)."""
        await hooks.close_hooks(self)

    def held(self) -> UnloadRecord:
        """What lives only in memory and an unload must keep (nothing is taken)."""
        return unload.held(self)

    def unfinished_work(self) -> list[str]:
        """Work of the pod's own, outside any task, that is not done yet (an unload waits)."""
        return unload.unfinished_work(self)

    def restore(self, held: UnloadRecord) -> None:
        """Take back what :meth:`held` kept when this session's pod was unloaded."""
        unload.restore(self, held)

    def plan_rewind(self, to: int | None, restore: RewindRestore) -> RewindPlan:
        """Check a rewind against the conversation and its checkpoints (RewindError)."""
        return rewind.check_rewind(self, to, restore)

    async def preview_rewind(self, plan: RewindPlan) -> RewindData:
        """What the rewind would change, changing nothing."""
        return await rewind.preview_rewind(self, plan)

    async def turn_snapshot_taken(self) -> None:
        """Wait for the turn's snapshot, if one is still being taken."""
        await rewind.turn_snapshot_taken(self)

    async def wait_idle(self) -> None:
        """Wait for the current task, if any, to finish (tests and shutdown)."""
        await self.task.wait_idle()


__all__ = ["ControllerSurface"]
