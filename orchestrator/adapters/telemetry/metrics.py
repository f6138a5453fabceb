"""The pod's metrics: made once per process, recorded by every pod in it (``pod.name`` tells
them apart). Names follow the GenAI semantic conventions where they have one; the pod's own
begin with ``pod.`` (docs/telemetry.md lists them)."""

from __future__ import annotations

from dataclasses import dataclass

from opentelemetry.metrics import Counter, Histogram, Meter

__all__ = ["PodMetrics"]

_SECONDS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900, 3600]
"""Histogram bounds in seconds: a quick tool call to a pause that lasts an hour."""

_TOKENS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576]
"""Histogram bounds in tokens: a short reply to a window of a million."""


@dataclass(frozen=True)
class PodMetrics:
    """Every instrument a pod records into."""

    token_usage: Histogram
    """``gen_ai.client.token.usage``: tokens of one request, by ``gen_ai.token.type``."""
    operation_duration: Histogram
    """``gen_ai.client.operation.duration``: one model request, start to last event."""
    tokens: Counter
    """``pod.tokens``: tokens by model and the API's kinds (input, output, cache_read,
    cache_creation), which add up to what is billed."""
    cost: Counter
    """``pod.cost``: dollars by model, from the price table (unpriced models count none)."""
    tool_duration: Histogram
    """``pod.tool.duration``: one tool call, from its start to its committed result."""
    state_duration: Histogram
    """``pod.state.duration``: time spent in each lifecycle state, recorded on leaving it."""
    pauses: Counter
    """``pod.pauses``: turns that paused, by ``pod.pause.reason``."""
    budget_stops: Counter
    """``pod.budget.stops``: turns a budget paused."""

    @classmethod
    def make(cls, meter: Meter) -> PodMetrics:
        """The instruments, on ``meter``."""
        return cls(
            token_usage=meter.create_histogram(
                "gen_ai.client.token.usage",
                unit="{token}",
                description="Tokens used by one model request",
                explicit_bucket_boundaries_advisory=_TOKENS,
            ),
            operation_duration=meter.create_histogram(
                "gen_ai.client.operation.duration",
                unit="s",
                description="Duration of one model request",
                explicit_bucket_boundaries_advisory=_SECONDS,
            ),
            tokens=meter.create_counter(
                "pod.tokens", unit="{token}", description="Tokens spent, by model and kind"
            ),
            cost=meter.create_counter(
                "pod.cost", unit="USD", description="Dollars spent, by model (priced models)"
            ),
            tool_duration=meter.create_histogram(
                "pod.tool.duration",
                unit="s",
                description="Duration of one tool call",
                explicit_bucket_boundaries_advisory=_SECONDS,
            ),
            state_duration=meter.create_histogram(
                "pod.state.duration",
                unit="s",
                description="Time spent in a lifecycle state",
                explicit_bucket_boundaries_advisory=_SECONDS,
            ),
            pauses=meter.create_counter(
                "pod.pauses", unit="{pause}", description="Turns that paused, by reason"
            ),
            budget_stops=meter.create_counter(
                "pod.budget.stops", unit="{pause}", description="Turns a budget paused"
            ),
        )
