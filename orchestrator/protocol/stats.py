"""What a pod spent, turn by turn, and where its time went (``get_stats`` → ``stats``).

The web page draws its charts from this (docs/http.md); any client may ask for it.
"""

from __future__ import annotations

from pydantic import Field

from orchestrator.protocol.data import EventData

__all__ = ["StatsData", "TurnStatsData"]

MAX_STATS_TURNS = 500
"""The most turns one ``stats`` event lists (the latest ones); older ones are counted in
``turns_omitted`` so a long session's reply stays a reasonable line."""


class TurnStatsData(EventData):
    """The requests of one turn, their token counts by kind summed, and what they cost."""

    turn: int
    requests: int = 0
    """Responses counted (the turn's model requests and any compaction in it)."""
    input_tokens: int = 0
    """Uncached input (after the last cache breakpoint)."""
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    """Written to the prompt cache."""
    output_tokens: int = 0
    cost_usd: float | None = None
    """Each request priced as the budget prices it; None when a model has no price."""


class StatsData(EventData):
    """Reply to ``get_stats``: per-turn usage from the session, and time by lifecycle state."""

    turns: list[TurnStatsData] = Field(default_factory=list)
    """Turns with at least one counted request, oldest first (at most the latest 500)."""
    turns_omitted: int = 0
    """Older turns left out of ``turns``."""
    state_seconds: dict[str, float] = Field(default_factory=dict)
    """Seconds spent in each leaf lifecycle state (``state`` of ``status``) since the pod
    process started (a load or restart starts the count again), the current stretch
    included."""
    status_of: dict[str, str] = Field(default_factory=dict)
    """The public status (idle, running, paused, stopped) each state in ``state_seconds``
    belongs to, so a client colours it without knowing the machine."""
    counting_since: float = 0.0
    """Unix time the count began."""
    id: int | str | None = None
