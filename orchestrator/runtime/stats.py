"""The ``stats`` reply: per-turn usage from the committed history, and time by state.

Nothing is counted twice: the tokens are the usage each response's item carries in the
session (so they survive a restart), priced by the budget's own :func:`~orchestrator.runtime.
controller.budget.price`; the seconds are the controller's :class:`~orchestrator.runtime.
state_clock.StateClock`.
"""

from __future__ import annotations

from typing import Any

from orchestrator.core.history import AssistantMessage, Compaction, Item
from orchestrator.protocol import StatsData, TurnStatsData
from orchestrator.protocol.stats import MAX_STATS_TURNS
from orchestrator.runtime.controller import budget
from orchestrator.runtime.controller.state import ControllerState
from states import public_status

__all__ = ["stats_data", "turn_stats"]


def turn_stats(state: ControllerState, items: list[Item]) -> list[TurnStatsData]:
    """Each turn's counted requests summed, oldest turn first."""
    turns: dict[int, TurnStatsData] = {}
    for item in items:
        if not isinstance(item, AssistantMessage | Compaction) or item.usage is None:
            continue
        model = item.model if isinstance(item, AssistantMessage) else None
        row = turns.setdefault(item.turn, TurnStatsData(turn=item.turn, cost_usd=0.0))
        usage = item.usage
        row.requests += 1
        row.input_tokens += usage.input_tokens
        row.cache_read_input_tokens += usage.cache_read_input_tokens
        row.cache_creation_input_tokens += usage.cache_creation_input_tokens
        row.output_tokens += usage.output_tokens
        if state.config.model_prices(model or budget.priced_model(state)) is None:
            row.cost_usd = None  # one unpriced request: the turn's cost is not known
        elif row.cost_usd is not None:
            row.cost_usd += budget.price(state, usage, model)
    for row in turns.values():
        if row.cost_usd is not None:
            row.cost_usd = round(row.cost_usd, 6)
    return [turns[turn] for turn in sorted(turns)]


def stats_data(state: ControllerState, request_id: Any = None) -> StatsData:
    """What ``get_stats`` answers."""
    rows = turn_stats(state, state.history.items)
    kept = rows[-MAX_STATS_TURNS:]
    clock = state.state_clock
    seconds = clock.totals()
    return StatsData(
        turns=kept,
        turns_omitted=len(rows) - len(kept),
        state_seconds=seconds,
        status_of={name: public_status(frozenset({name})) for name in seconds},
        counting_since=clock.started_at,
        id=request_id,
    )
