"""Budgets in dollars that pause a turn: the caps, the check, and the sentence it says (pure).

Two caps (docs/budgets.md): ``budget_usd`` for the session, ``turn_budget_usd`` for one turn
(a prompt and everything it triggers: its rounds, compactions, MCP sampling, child pods).
:func:`budget_stop` is asked before each request, with what the request is known to cost
before it is sent (its input, priced at the input rate), and after each response; it names the
cap the pod would pass, or None. The runtime pauses the turn on a stop, as a person's pause
would, and the same :class:`BudgetStop` gives the alert, ``pod run``'s line and the TUI's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["BudgetCaps", "BudgetStop", "CapName", "budget_stop", "lowered_caps"]

CapName = Literal["budget_usd", "turn_budget_usd"]


@dataclass(frozen=True, slots=True)
class BudgetCaps:
    """The session's and the turn's caps in dollars; None: no cap."""

    budget_usd: float | None = None
    turn_budget_usd: float | None = None

    @property
    def any(self) -> bool:
        """Whether either cap is set (an uncapped pod never checks)."""
        return self.budget_usd is not None or self.turn_budget_usd is not None


@dataclass(frozen=True, slots=True)
class BudgetStop:
    """The cap a request would pass: which, its amount, what was spent, what was needed."""

    cap: CapName
    limit: float
    spent: float
    """Dollars spent against this cap (the session's, or the turn's) so far."""
    needed: float = 0.0
    """What the next request was known to cost before it is sent (0 after a response)."""

    @property
    def flag(self) -> str:
        """The option that raises this cap (``pod budget set`` and the start commands)."""
        return "--budget-usd" if self.cap == "budget_usd" else "--turn-budget-usd"

    def sentence(self) -> str:
        """What a person reads: the cap, the spend, and how to go on."""
        whose = "the session's" if self.cap == "budget_usd" else "the turn's"
        reached = (
            f"spent ${self.spent:.4f} of {whose} {self.cap} ${self.limit:.4f}"
            if self.needed == 0
            else f"spent ${self.spent:.4f} of {whose} {self.cap} ${self.limit:.4f}, and the "
            f"next request's input alone costs about ${self.needed:.4f}"
        )
        return (
            f"paused at the budget: {reached}. To go on, raise it (pod budget set {self.flag} "
            "AMOUNT, or /budget in pod chat) and resume."
        )


def budget_stop(
    caps: BudgetCaps, *, session_spent: float, turn_spent: float, next_cost: float = 0.0
) -> BudgetStop | None:
    """The cap that spending ``next_cost`` more would pass (or has passed), or None.

    A cap is reached when what was spent plus what the next request is known to cost exceeds
    it, or when what was spent alone has reached it (after a response, ``next_cost`` 0). The
    turn's cap is named first: it is the one a person raises for this turn alone.
    """
    for cap, limit, spent in (
        ("turn_budget_usd", caps.turn_budget_usd, turn_spent),
        ("budget_usd", caps.budget_usd, session_spent),
    ):
        if limit is None:
            continue
        if spent >= limit or spent + next_cost > limit:
            return BudgetStop(cap=cap, limit=limit, spent=spent, needed=next_cost)  # type: ignore[arg-type]
    return None


def lowered_caps(caps: BudgetCaps, *, session_spent: float, turn_spent: float) -> BudgetCaps:
    """What a child pod may spend: the least this pod has left under either cap (the child's
    spend is new spend of this pod's turn and session alike), as the child's session cap;
    no cap when this pod has none."""
    remaining = [
        limit - used
        for limit, used in ((caps.budget_usd, session_spent), (caps.turn_budget_usd, turn_spent))
        if limit is not None
    ]
    if not remaining:
        return BudgetCaps()
    return BudgetCaps(budget_usd=max(0.0, min(remaining)))
