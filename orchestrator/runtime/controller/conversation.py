"""Committing to the conversation and counting what it costs; the model's window and
thinking plan; the wire messages of the next request."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from orchestrator.adapters.providers.base import ProviderError
from orchestrator.adapters.session import SpendRecord
from orchestrator.core.history import AssistantMessage, Compaction, Item
from orchestrator.core.thinking import ThinkingPlan, ThinkingRefused
from orchestrator.core.usage import TokenUsage
from orchestrator.core.web import WebPlan
from orchestrator.runtime.context import OFF_LOOP_ITEMS
from orchestrator.runtime.controller import budget, modes
from orchestrator.runtime.controller.state import ControllerState
from orchestrator.runtime.offload import off_loop
from orchestrator.runtime.turn import TurnError


def commit(state: ControllerState, item: Item) -> Item:
    """Commit through the transcript: on disk, then in history, then announced."""
    stored = state.transcript.commit(item)
    usage = getattr(stored, "usage", None)
    if usage is not None:
        state.session_usage += usage
        state.turn_usage += usage
        budget.count(state, budget.price(state, usage, getattr(stored, "model", None)))
        if isinstance(stored, AssistantMessage):
            state.context.observe(usage)
            if stored.model is not None:  # a fallback answered: its own prices
                state.model_usage[stored.model] = (
                    state.model_usage.get(stored.model, TokenUsage()) + usage
                )
    if isinstance(stored, Compaction):
        # The view's prefix changed anyway: prune now what waited for a step.
        bound = state.context.prune_at_compaction()
        if bound is not None:
            move_prune_bound(state, bound, 0)
    return stored


def inject_queued_notes(state: ControllerState) -> None:
    """Commit queued notes, and what background jobs have to tell, as system messages."""
    for note in state.notes.take():
        commit(state, note)
    kept, state.job_notes = state.job_notes, []
    for note in kept:
        commit(state, note)
    if state.jobs is not None:
        # Background jobs that ended (or a crash ended) since the model last heard.
        for note in state.jobs.take_notes():
            commit(state, note)
        state.jobs.delivered()
    if state.board.mcp is not None:
        # MCP resources the model read that changed since (subscriptions).
        for note in state.board.mcp.take_notes():
            commit(state, note)
    mode = modes.mode_note(state)
    if mode is not None:
        commit(state, mode)


def spend(state: ControllerState, usage: TokenUsage, source: str) -> None:
    """Count tokens spent outside the conversation's own requests as the turn's, and keep
    them in the session file so the usage and cost survive a reload."""
    state.session_usage += usage
    state.turn_usage += usage
    budget.count(state, budget.price(state, usage))
    state.transcript.keep(
        SpendRecord(
            turn=state.history.turn,
            source=source,
            usage=dataclasses.asdict(usage),
            at_ms=int(time.time() * 1000),
        )
    )


def spend_dollars(state: ControllerState, dollars: float, source: str) -> None:
    """Count dollars a child pod spent as the turn's and the session's, kept in the session
    file so the budgets survive a reload."""
    budget.count(state, dollars)
    state.transcript.keep(
        SpendRecord(
            turn=state.history.turn,
            source=source,
            usage={},
            cost_usd=dollars,
            at_ms=int(time.time() * 1000),
        )
    )
    state.board.budget_changed()


def count_spent(state: ControllerState, spends: list[SpendRecord]) -> None:
    """Add what a loaded session's ``spend`` records say (a paused turn's to its turn)."""
    fields = {f.name for f in dataclasses.fields(TokenUsage)}
    for record in spends:
        usage = TokenUsage(**{k: v for k, v in record.usage.items() if k in fields})
        state.session_usage += usage
        this_turn = state.turn_is_open and record.turn == state.history.turn
        if this_turn:
            state.turn_usage += usage
        dollars = record.cost_usd if record.cost_usd is not None else budget.price(state, usage)
        budget.count(state, dollars, turn=this_turn)


async def wire_messages(state: ControllerState) -> list[dict[str, Any]]:
    """Wire messages for the next request: the context's view, pruned in steps."""
    context = state.context
    # Deciding a prune step sizes every old result: off the loop for a long view.
    long = len(context.view()) > OFF_LOOP_ITEMS
    move = await off_loop(context.prune_move) if long else context.prune_move()
    if move is not None:
        move_prune_bound(state, *move)
    # Never ask the model about a history the session file does not hold.
    await state.transcript.settled()
    return await context.prepared_messages()


def move_prune_bound(state: ControllerState, bound: int, tokens: int) -> None:
    """Prune the view up to ``bound``, recorded first so a reload prunes the same."""
    state.transcript.record_prune(bound, tokens)
    state.context.apply_prune(bound)


def thinking_plan(state: ControllerState) -> ThinkingPlan:
    """What the requests ask for (nothing until the model's capabilities are known)."""
    return state.thinking or ThinkingPlan()


def web_plan(state: ControllerState) -> WebPlan:
    """The web tools the requests declare (none until the model's capabilities are known)."""
    return state.web or WebPlan()


async def learn_window(state: ControllerState) -> None:
    """Make sure the model's window, thinking plan and web plan are known (asks the provider
    once); :class:`TurnError` before any request when the model refuses the thinking
    settings."""
    await state.context.learn_window(state.provider, state.alert)
    if state.thinking is None and state.thinking_refused is None:
        await _learn_thinking(state)
    if state.web is None:
        await _learn_web(state)
    if state.thinking_refused is not None:
        raise TurnError(state.thinking_refused, code="invalid_request")


async def _learn_thinking(state: ControllerState) -> None:
    try:
        capabilities = await state.provider.thinking_capabilities()
    except ProviderError as exc:
        capabilities = None
        if state.config.thinking == "auto":
            state.alert("info", "thinking", f"thinking stays off: {exc}")
    try:
        plan = state.config.thinking_plan(capabilities)
    except ThinkingRefused as exc:
        state.thinking_refused = str(exc)
        state.alert("error", "thinking", state.thinking_refused)
    else:
        state.thinking = plan
        # The pre-send validator checks the rules that hold only with thinking on.
        state.validator.thinking = plan.on
    state.board.changed()


async def _learn_web(state: ControllerState) -> None:
    web = state.config.web
    try:
        capabilities = await state.provider.web_capabilities()
    except ProviderError as exc:
        # ``auto`` asks for nothing then, and the window's lookup already said why; an
        # explicit setting is declared as asked, and that is worth a word.
        capabilities = None
        if web.search == "on" or web.fetch == "server":
            state.alert("info", "web", f"the web tools are declared as configured: {exc}")
    plan = state.config.web_plan(capabilities)
    if web.search == "on" and not plan.search:
        state.alert("warn", "web", f"web search is off: {plan.search_why}")
    if web.fetch == "server" and not plan.server_fetch:
        state.alert("warn", "web", f"web fetch is off: {plan.fetch_why}")
    state.web = plan
    state.board.changed()


__all__ = [
    "commit",
    "count_spent",
    "inject_queued_notes",
    "learn_window",
    "move_prune_bound",
    "spend",
    "spend_dollars",
    "thinking_plan",
    "web_plan",
    "wire_messages",
]
