"""The price table and the pure functions that price a usage (core/prices.py)."""

from __future__ import annotations

import pytest

from orchestrator.core.prices import (
    DEFAULT_PRICES,
    LONG_CONTEXT_TOKENS,
    PRICES_CHECKED,
    PRICES_SOURCE,
    Prices,
    cost_of,
    input_cost,
    prices_for,
)
from orchestrator.core.usage import TokenUsage

SONNET = Prices(input=3.0, output=15.0, long_context_input=6.0, long_context_output=22.5)


def test_each_kind_of_count_has_its_own_price() -> None:
    usage = TokenUsage(
        input_tokens=1_000_000,
        cache_creation_input_tokens=1_000_000,
        cache_read_input_tokens=1_000_000,
        output_tokens=1_000_000,
        web_search_requests=3,
    )
    # input 3 + 5-min writes 3.75 + reads 0.30 + output 15 + 3 searches at $10 per 1,000
    assert Prices(input=3.0, output=15.0).cost(usage) == pytest.approx(3 + 3.75 + 0.3 + 15 + 0.03)


def test_one_hour_writes_cost_what_the_api_breakdown_says() -> None:
    usage = TokenUsage(cache_creation_input_tokens=100_000, one_hour_cache_writes=40_000)
    # 60,000 at 5-min ($3.75/M) and 40,000 at 1-hour ($6/M)
    assert SONNET.cost(usage) == pytest.approx(0.06 * 3.75 + 0.04 * 6.0)
    # Without a breakdown, the configured lifetime decides.
    plain = TokenUsage(cache_creation_input_tokens=100_000)
    assert SONNET.cost(plain, ttl="1h") == pytest.approx(0.1 * 6.0)
    assert SONNET.cost(plain, ttl="5m") == pytest.approx(0.1 * 3.75)


def test_past_the_long_context_threshold_the_whole_request_pays_the_long_price() -> None:
    under = TokenUsage(input_tokens=LONG_CONTEXT_TOKENS, output_tokens=1_000)
    over = TokenUsage(
        input_tokens=1_000, cache_read_input_tokens=LONG_CONTEXT_TOKENS, output_tokens=1_000
    )
    assert SONNET.cost(under) == pytest.approx(0.2 * 3.0 + 0.001 * 15.0)
    # Cache reads count toward the threshold, and are read at a tenth of the long price.
    assert SONNET.cost(over) == pytest.approx(0.001 * 6.0 + 0.2 * 0.6 + 0.001 * 22.5)
    # A model with no long-context price keeps its prices.
    haiku = Prices(input=1.0, output=5.0)
    assert haiku.cost(over) == pytest.approx(0.001 * 1.0 + 0.2 * 0.1 + 0.001 * 5.0)


def test_thinking_is_output() -> None:
    # The API reports thinking inside output_tokens; nothing else prices it.
    assert SONNET.cost(TokenUsage(output_tokens=2_000)) == pytest.approx(0.03)


def test_an_unknown_model_has_no_price_never_zero() -> None:
    assert cost_of(TokenUsage(input_tokens=10), "gpt-9", DEFAULT_PRICES) is None
    assert cost_of(TokenUsage(input_tokens=10), "claude-opus-5-x", {}) is None
    cost = cost_of(TokenUsage(input_tokens=1_000_000), "claude-haiku-4-5-20251001", DEFAULT_PRICES)
    assert cost == pytest.approx(1.0)


def test_the_longest_prefix_wins() -> None:
    assert prices_for("claude-opus-4-5-20251101", DEFAULT_PRICES) == Prices(input=5, output=25)
    assert prices_for("claude-opus-4-20250514", DEFAULT_PRICES) == Prices(input=15, output=75)


def test_the_known_input_cost_of_a_request_not_yet_sent() -> None:
    assert input_cost(100_000, SONNET) == pytest.approx(0.3)
    assert input_cost(300_000, SONNET) == pytest.approx(1.8)  # long-context input price


def test_the_table_says_where_and_when_it_was_read() -> None:
    assert PRICES_SOURCE.startswith("https://")
    assert PRICES_CHECKED[:4].isdigit()
    assert all(p.input > 0 and p.output >= p.input for p in DEFAULT_PRICES.values())
