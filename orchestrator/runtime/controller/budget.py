"""Budgets in dollars: what the pod spent, the caps, and the check that pauses a turn.

Every request the pod's key pays for is priced once, when its usage is counted (a turn's
response, a compaction's summary, an MCP server's sampling request, a child pod's turns):
:func:`count` adds its dollars to the session's and the open turn's spend. The turn loop asks
:func:`reached` before each request (with what the request's input is known to cost) and
before running the calls of a response; a cap reached is said in one alert and the turn ends
``paused``, as a person's pause ends it, with ``pause_reason`` ``"budget"``
(docs/budgets.md). ``set_budget`` changes the caps (:func:`set_caps`); a ``resume`` without
raising them meets the same check at once, and pauses again before sending anything.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Literal

from orchestrator.adapters.session import BudgetRecord
from orchestrator.core.budget import BudgetCaps, BudgetStop, budget_stop, lowered_caps
from orchestrator.core.history import AssistantMessage, Compaction, Item
from orchestrator.core.prices import input_cost
from orchestrator.core.usage import TokenUsage
from orchestrator.protocol import BudgetData
from orchestrator.runtime.controller.state import ControllerState

__all__ = [
    "budget_data",
    "caps_of",
    "child_caps",
    "count",
    "pause_reason",
    "price",
    "reached",
    "restore_caps",
    "set_caps",
    "spent_of",
    "would_stop",
]


def caps_of(state: ControllerState) -> BudgetCaps:
    """The pod's caps now: the config's, or what ``set_budget`` made of them."""
    return state.caps if state.caps is not None else config_caps(state)


def config_caps(state: ControllerState) -> BudgetCaps:
    """The caps the pod started with."""
    return BudgetCaps(
        budget_usd=state.config.budget_usd, turn_budget_usd=state.config.turn_budget_usd
    )


def priced_model(state: ControllerState) -> str:
    """The model whose prices the pod's requests cost: the provider's; for the offline
    scripted provider, which is no model, the configured one it stands in for (so a budget
    can be tried, and tested, without a key)."""
    return state.config.model if state.provider.name == "scripted" else state.provider.model


def price(state: ControllerState, usage: TokenUsage, model: str | None = None) -> float:
    """Dollars one request cost: of the pod's model, or of ``model`` when another answered
    it (the fallback, docs/providers.md), at that model's own prices. 0 for a model without
    a price: a pod with a budget always has one for its own, the config refuses it
    otherwise."""
    prices = state.config.model_prices(model or priced_model(state))
    return prices.cost(usage, ttl=state.config.prompt_cache) if prices is not None else 0.0


def count(state: ControllerState, dollars: float, *, turn: bool = True) -> None:
    """Add ``dollars`` to the session's spend, and to the open turn's (``turn``)."""
    state.session_spent_usd += dollars
    if turn:
        state.turn_spent_usd += dollars


def spent_of(state: ControllerState, items: list[Item]) -> float:
    """What the requests behind these items cost (a loaded session's spend)."""
    return sum(
        price(state, item.usage, item.model if isinstance(item, AssistantMessage) else None)
        for item in items
        if isinstance(item, AssistantMessage | Compaction) and item.usage is not None
    )


def would_stop(
    state: ControllerState, next_tokens: int = 0, *, session_only: bool = False
) -> BudgetStop | None:
    """The cap a request whose input is ``next_tokens`` would pass (0: the spend alone), or
    None; says nothing. ``session_only``: no turn is open, so only the session's cap holds."""
    caps = caps_of(state)
    if session_only:
        caps = BudgetCaps(budget_usd=caps.budget_usd)
    if not caps.any:
        return None
    # A command's turn asks its own model: the next request costs at that model's prices.
    model = state.turn_model if state.turn_model and not session_only else priced_model(state)
    prices = state.config.model_prices(model)
    needed = input_cost(next_tokens, prices) if prices is not None and next_tokens else 0.0
    return budget_stop(
        caps,
        session_spent=state.session_spent_usd,
        turn_spent=state.turn_spent_usd,
        next_cost=needed,
    )


def reached(state: ControllerState, next_tokens: int = 0) -> bool:
    """Whether a cap stops the turn before a request whose input is ``next_tokens`` (0:
    before running a response's calls); says so once per stop, and marks the pause."""
    stop = would_stop(state, next_tokens)
    if stop is None:
        return False
    _stopped(state, stop)
    return True


def _stopped(state: ControllerState, stop: BudgetStop) -> None:
    state.budget_stop = stop
    state.alert("warn", "budget", stop.sentence())


def child_stopped(state: ControllerState, child: str) -> None:
    """A child pod stopped at the budget its parent passed down: say so with this pod's
    tightest cap, and mark the pause the caller asks for as the budget's."""
    caps = caps_of(state)
    left = [
        (limit - spent, cap, limit, spent)
        for cap, limit, spent in (
            ("turn_budget_usd", caps.turn_budget_usd, state.turn_spent_usd),
            ("budget_usd", caps.budget_usd, state.session_spent_usd),
        )
        if limit is not None
    ]
    if not left:
        return
    _, cap, limit, spent = min(left)
    stop = BudgetStop(cap=cap, limit=limit, spent=spent)  # type: ignore[arg-type]
    state.budget_stop = stop
    state.alert("warn", "budget", f"child pod {child}: {stop.sentence()}")


def pause_reason(state: ControllerState, paused: bool) -> Literal["user", "budget"] | None:
    """Why the pod is paused (None when it is not)."""
    if not paused:
        return None
    return "budget" if state.budget_stop is not None else "user"


def unpriced(state: ControllerState) -> str | None:
    """Why a cap cannot be set: the model has no price (a budget that cannot count does
    not pretend to); None when it has one."""
    model = priced_model(state)
    if state.config.model_prices(model) is not None and state.turn_is_open and state.turn_model:
        model = state.turn_model  # the open turn runs on a command's model
    if state.config.model_prices(model) is not None:
        return None
    return (
        f"model {model!r} has no price, so a budget cannot count: set "
        f'[prices."{model}"] input and output (dollars per million tokens) in your own config'
    )


def set_caps(state: ControllerState, changes: dict[str, float | None]) -> BudgetCaps:
    """Apply a ``set_budget``: each key given replaces its cap (null: no cap); the others
    stay. The stop a paused turn met is forgotten: ``resume`` checks again."""
    caps = dataclasses.replace(caps_of(state), **changes)
    state.caps = caps
    # Kept in the session: a restart (or a host's unload and load) keeps what was set.
    configured = config_caps(state)
    state.transcript.keep(
        BudgetRecord(
            budget_usd=caps.budget_usd,
            turn_budget_usd=caps.turn_budget_usd,
            configured=(configured.budget_usd, configured.turn_budget_usd),
            at_ms=int(time.time() * 1000),
        )
    )
    state.board.budget_changed()
    return caps


def restore_caps(state: ControllerState, record: BudgetRecord) -> None:
    """Take back the session's budgets (its last ``budget`` record) when the pod starts with
    the configured budgets they were set over; budgets given anew at the start win."""
    configured = config_caps(state)
    if record.configured == (configured.budget_usd, configured.turn_budget_usd):
        state.caps = BudgetCaps(
            budget_usd=record.budget_usd, turn_budget_usd=record.turn_budget_usd
        )


def child_caps(state: ControllerState) -> BudgetCaps:
    """What a child pod may spend: the least this pod has left under either cap."""
    return lowered_caps(
        caps_of(state),
        session_spent=state.session_spent_usd,
        turn_spent=state.turn_spent_usd,
    )


def budget_data(state: ControllerState) -> BudgetData:
    """The caps and the spend, as ``status`` reports them."""
    caps = caps_of(state)
    return BudgetData(
        budget_usd=caps.budget_usd,
        turn_budget_usd=caps.turn_budget_usd,
        spent_usd=round(state.session_spent_usd, 6),
        turn_spent_usd=round(state.turn_spent_usd, 6),
    )
