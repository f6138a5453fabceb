"""Budgets in dollars (core/budget.py): which cap a request would pass, and what is said."""

from __future__ import annotations

from orchestrator.core.budget import BudgetCaps, budget_stop, lowered_caps


def test_no_cap_never_stops() -> None:
    assert budget_stop(BudgetCaps(), session_spent=1e9, turn_spent=1e9, next_cost=1e9) is None


def test_a_request_that_would_start_past_the_cap_is_not_sent() -> None:
    caps = BudgetCaps(budget_usd=1.0)
    assert budget_stop(caps, session_spent=0.5, turn_spent=0.5, next_cost=0.5) is None
    stop = budget_stop(caps, session_spent=0.5, turn_spent=0.5, next_cost=0.51)
    assert stop is not None and stop.cap == "budget_usd" and stop.needed == 0.51


def test_after_a_response_the_spend_alone_decides() -> None:
    caps = BudgetCaps(turn_budget_usd=0.25)
    assert budget_stop(caps, session_spent=9.0, turn_spent=0.2499) is None
    stop = budget_stop(caps, session_spent=9.0, turn_spent=0.25)
    assert stop is not None and stop.cap == "turn_budget_usd" and stop.spent == 0.25


def test_the_turn_cap_is_named_first_and_the_sentence_says_how_to_go_on() -> None:
    caps = BudgetCaps(budget_usd=1.0, turn_budget_usd=0.1)
    stop = budget_stop(caps, session_spent=2.0, turn_spent=0.2)
    assert stop is not None and stop.cap == "turn_budget_usd"
    text = stop.sentence()
    assert "turn_budget_usd $0.1000" in text and "spent $0.2000" in text
    assert "pod budget set --turn-budget-usd" in text and "resume" in text
    session = budget_stop(
        BudgetCaps(budget_usd=1.0), session_spent=0.9, turn_spent=0.0, next_cost=0.2
    )
    assert session is not None
    assert "--budget-usd" in session.sentence() and "$0.2000" in session.sentence()


def test_a_child_gets_the_least_its_parent_has_left() -> None:
    assert lowered_caps(BudgetCaps(), session_spent=1.0, turn_spent=1.0) == BudgetCaps()
    caps = BudgetCaps(budget_usd=10.0, turn_budget_usd=1.0)
    assert lowered_caps(caps, session_spent=9.5, turn_spent=0.2) == BudgetCaps(budget_usd=0.5)
    assert lowered_caps(caps, session_spent=2.0, turn_spent=0.25) == BudgetCaps(budget_usd=0.75)
    assert lowered_caps(caps, session_spent=20.0, turn_spent=0.0) == BudgetCaps(budget_usd=0.0)
