"""What ``get_status`` says about the context window and the session's cost, and the same in
words for people (pure)."""

from __future__ import annotations

from typing import Any

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


def status_text(data: dict[str, Any]) -> str:
    """``pod status`` for a person: state, model, turn, tokens, context and cost."""
    usage = data.get("usage") or {}
    tokens = f"tokens in {usage.get('input_tokens', 0):,} out {usage.get('output_tokens', 0):,}"
    cached = usage.get("cache_read_input_tokens", 0)
    if cached:
        tokens += (
            f" (cache read {cached:,}, written {usage.get('cache_creation_input_tokens', 0):,})"
        )
    lines = [
        f"{data['name']} {data['status']} ({data['state']}) · {data['provider']}/{data['model']}"
        f" · turn {data['turn']}",
        tokens + (f" · ${data['cost_usd']:.4f}" if data.get("cost_usd") is not None else ""),
    ]
    context = data.get("context")
    if context:
        lines.append(
            f"context {context['percent']}% of {context['window']:,} tokens "
            f"({context['used']:,} used; compacts at {context['compact_at']}%)"
        )
    waiting = data.get("approvals") or []
    if waiting:
        lines.append(
            f"{len(waiting)} call(s) awaiting approval: "
            + ", ".join(f"{a['tool']} ({a['id']})" for a in waiting)
        )
    lines.append(f"workspace {data['workspace']}")
    return "\n".join(lines)
