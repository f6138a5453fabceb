"""What ``get_status`` says about the context window and the session's cost (pure)."""

from __future__ import annotations

from orchestrator.config import PodConfig
from orchestrator.context import ContextSize
from orchestrator.protocol import ContextData
from orchestrator.usage import TokenUsage


def context_data(size: ContextSize) -> ContextData:
    """How full the window is, as the protocol reports it."""
    return ContextData(
        used=size.used,
        window=size.window,
        percent=size.percent,
        compact_at=round(100 * size.compact_at),
    )


def session_cost(config: PodConfig, model: str, usage: TokenUsage) -> float | None:
    """Dollars the session's requests cost, from the price table; None for an unpriced model."""
    prices = config.model_prices(model)
    if prices is None:
        return None
    return round(prices.cost(usage, ttl=config.prompt_cache), 6)
