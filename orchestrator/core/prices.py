"""What a model's tokens cost: the one price table, and the pure functions that price a usage.

Budgets (docs/budgets.md) pause a turn on what these functions say, so they price every count
the Messages API reports: uncached input, cache writes (5-minute and 1-hour entries at their
own prices), cache reads, output (thinking included: it bills as output), web searches (per
1,000) and server web fetches (free as published, priced for a gateway that bills them), and
the long-context price a request pays as a whole once its input passes
:data:`LONG_CONTEXT_TOKENS` on a model that charges one.

:func:`cost_of` is the function to call from anywhere a request was made (a turn, a
compaction, an MCP sampling request, a fallback model's request): a usage, the model that
answered it, the table. It returns None for a model the table does not price, never a guess.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from orchestrator.core.usage import TokenUsage

__all__ = [
    "DEFAULT_PRICES",
    "LONG_CONTEXT_TOKENS",
    "PRICES_CHECKED",
    "PRICES_SOURCE",
    "WEB_SEARCH_PER_1K",
    "Prices",
    "cost_of",
    "input_cost",
    "prices_for",
]

PRICES_SOURCE = "https://platform.claude.com/docs/en/about-claude/pricing"
"""Where :data:`DEFAULT_PRICES` were read (list prices, the Claude API, standard tier)."""
PRICES_CHECKED = "2026-11-29"
"""When they were last read there."""

WEB_SEARCH_PER_1K = 10.0
"""Dollars per 1,000 web searches, the published price (errored searches are not billed, and
not counted in ``web_search_requests``)."""

LONG_CONTEXT_TOKENS = 200_000
"""A request whose input (uncached, cache writes and reads together) passes this many tokens
pays the model's long-context prices for all of its tokens, where the model has them."""

CacheTTL = Literal["5m", "1h", "off"]


class Prices(BaseModel):
    """Dollars per million tokens of one model family, and per 1,000 server-tool uses."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    input: float = Field(ge=0)
    """Dollars per million uncached input tokens."""
    output: float = Field(ge=0)
    """Dollars per million output tokens (thinking included)."""
    cache_write: float | None = Field(default=None, ge=0)
    """Writing the prompt cache (5-minute entries); 1.25 × input when unset."""
    cache_write_1h: float | None = Field(default=None, ge=0)
    """Writing 1-hour cache entries; 2 × input when unset."""
    cache_read: float | None = Field(default=None, ge=0)
    """Reading the prompt cache; 0.1 × input when unset."""
    long_context_input: float | None = Field(default=None, ge=0)
    """Input price of a request past 200,000 input tokens (the cache prices follow it by the
    same multipliers); unset: the model has no long-context price."""
    long_context_output: float | None = Field(default=None, ge=0)
    """Output price of such a request; the normal output price when unset."""
    web_search_per_1k: float = Field(default=WEB_SEARCH_PER_1K, ge=0)
    """Dollars per 1,000 web searches (the API's web search tool), $10 as published."""
    web_fetch_per_1k: float = Field(default=0.0, ge=0)
    """Dollars per 1,000 server web fetches: 0, since the API bills only their tokens."""

    def cost(self, usage: TokenUsage, *, ttl: CacheTTL = "5m") -> float:
        """What one request's ``usage`` costs in dollars (or a sum of requests' under the
        long-context threshold). ``ttl``: the configured cache lifetime, used for the cache
        writes a usage does not break down (an API usage says which were 1-hour writes)."""
        long = self.long_context_input is not None and usage.context_tokens > LONG_CONTEXT_TOKENS
        if long:
            assert self.long_context_input is not None
            base_in, base_out = self.long_context_input, self.long_context_output or self.output
            write_5m, write_1h, read = 1.25 * base_in, 2.0 * base_in, 0.1 * base_in
        else:
            base_in, base_out = self.input, self.output
            write_5m = self.cache_write if self.cache_write is not None else 1.25 * base_in
            write_1h = self.cache_write_1h if self.cache_write_1h is not None else 2.0 * base_in
            read = self.cache_read if self.cache_read is not None else 0.1 * base_in
        written = usage.cache_creation_input_tokens
        hour = min(usage.one_hour_cache_writes, written)
        if hour == 0 and ttl == "1h":
            hour = written  # no breakdown: the configured lifetime, the dearer one
        tokens = (
            usage.input_tokens * base_in
            + (written - hour) * write_5m
            + hour * write_1h
            + usage.cache_read_input_tokens * read
            + usage.output_tokens * base_out
        )
        uses = (
            usage.web_search_requests * self.web_search_per_1k
            + usage.web_fetch_requests * self.web_fetch_per_1k
        )
        return tokens / 1_000_000 + uses / 1_000


# Prefixes match model ids and their dated forms (claude-sonnet-4-5-20250929). A model the
# table does not know has no price: a budget on it is refused at start (config), as a cost
# that cannot be counted must not pretend to be zero.
_SONNET_4_LONG = {"long_context_input": 6.0, "long_context_output": 22.5}

DEFAULT_PRICES: Mapping[str, Prices] = {
    "claude-opus-5": Prices(input=5.0, output=25.0),
    "claude-sonnet-5": Prices(input=2.0, output=10.0),
    "claude-opus-4-6": Prices(
        input=5.0, output=25.0, long_context_input=10.0, long_context_output=37.5
    ),
    "claude-opus-4-5": Prices(input=5.0, output=25.0),
    "claude-opus-4-1": Prices(input=15.0, output=75.0),
    "claude-opus-4": Prices(input=15.0, output=75.0),
    "claude-sonnet-4": Prices(input=3.0, output=15.0, **_SONNET_4_LONG),
    "claude-haiku-4-5": Prices(input=1.0, output=5.0),
    "claude-3-5-haiku": Prices(input=0.8, output=4.0),
}
"""List prices by model-name prefix (the longest matching prefix wins), read at
:data:`PRICES_SOURCE` on :data:`PRICES_CHECKED`; the user's ``[prices."<prefix>"]`` tables
extend or override them (a workspace's config cannot: prices decide when a budget stops)."""


def prices_for(model: str, table: Mapping[str, Prices]) -> Prices | None:
    """The prices of the longest prefix of ``model`` in ``table``; None when unknown."""
    matches = [prefix for prefix in table if model.startswith(prefix)]
    return table[max(matches, key=len)] if matches else None


def cost_of(
    usage: TokenUsage, model: str, table: Mapping[str, Prices], *, ttl: CacheTTL = "5m"
) -> float | None:
    """Dollars one request of ``model`` cost, its ``usage`` priced by ``table``; None when
    the table has no price for the model."""
    prices = prices_for(model, table)
    return None if prices is None else prices.cost(usage, ttl=ttl)


def input_cost(tokens: int, prices: Prices) -> float:
    """What ``tokens`` of uncached input cost: the known part of a request not yet sent
    (at the long-context price past the threshold, where the model has one)."""
    rate = (
        prices.long_context_input
        if prices.long_context_input is not None and tokens > LONG_CONTEXT_TOKENS
        else prices.input
    )
    return tokens * rate / 1_000_000
