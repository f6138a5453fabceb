"""Token usage and what it costs: counts by kind, sums, and a configurable price table.

The Messages API reports four counts per response: ``input_tokens`` (the part of the prompt
after the last cache breakpoint), ``cache_creation_input_tokens`` (written to the prompt cache),
``cache_read_input_tokens`` (read from it) and ``output_tokens``. All three input kinds fill
the context window; they differ in price. Prices are dollars per million tokens, per model
family, from :data:`DEFAULT_PRICES` (published list prices when this was written) or the
``prices`` table of ``.pod/config.toml``.

The API's server tools add counts of their own (``usage.server_tool_use``): web searches are
billed per search (:data:`WEB_SEARCH_PER_1K`, $10 per 1,000 as published); web fetches cost
only the tokens of what they bring in (the docs: "no additional charges beyond standard token
costs"), so their price defaults to 0 and is there for a gateway that bills them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field


@dataclass(frozen=True, slots=True, kw_only=True)
class TokenUsage:
    """Token counts of one request, or a sum of them."""

    input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    output_tokens: int = 0
    # Left out of the session file when zero: most requests search nothing.
    web_search_requests: Annotated[int, Field(exclude_if=lambda v: v == 0)] = 0
    """Searches the API's web search tool ran for this request (billed per search)."""
    web_fetch_requests: Annotated[int, Field(exclude_if=lambda v: v == 0)] = 0
    """Pages the API's web fetch tool read for this request."""

    @property
    def context_tokens(self) -> int:
        """Everything the request sent: the part of the context window it filled."""
        return self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            input_tokens=self.input_tokens + other.input_tokens,
            cache_creation_input_tokens=self.cache_creation_input_tokens
            + other.cache_creation_input_tokens,
            cache_read_input_tokens=self.cache_read_input_tokens + other.cache_read_input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            web_search_requests=self.web_search_requests + other.web_search_requests,
            web_fetch_requests=self.web_fetch_requests + other.web_fetch_requests,
        )


def total(usages: Iterable[TokenUsage]) -> TokenUsage:
    """The sum of several usages."""
    out = TokenUsage()
    for usage in usages:
        out = out + usage
    return out


WEB_SEARCH_PER_1K = 10.0
"""Dollars per 1,000 web searches, the published price (errored searches are not billed, and
not counted in ``web_search_requests``)."""


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
    web_search_per_1k: float = Field(default=WEB_SEARCH_PER_1K, ge=0)
    """Dollars per 1,000 web searches (the API's web search tool), $10 as published."""
    web_fetch_per_1k: float = Field(default=0.0, ge=0)
    """Dollars per 1,000 server web fetches: 0, since the API bills only their tokens."""

    def cost(self, usage: TokenUsage, *, ttl: str = "5m") -> float:
        """What ``usage`` costs in dollars: its tokens and its server-tool uses."""
        write = (
            (self.cache_write_1h if self.cache_write_1h is not None else 2.0 * self.input)
            if ttl == "1h"
            else (self.cache_write if self.cache_write is not None else 1.25 * self.input)
        )
        read = self.cache_read if self.cache_read is not None else 0.1 * self.input
        return (
            usage.input_tokens * self.input
            + usage.cache_creation_input_tokens * write
            + usage.cache_read_input_tokens * read
            + usage.output_tokens * self.output
        ) / 1_000_000 + (
            usage.web_search_requests * self.web_search_per_1k
            + usage.web_fetch_requests * self.web_fetch_per_1k
        ) / 1_000


DEFAULT_PRICES: Mapping[str, Prices] = {
    "claude-opus-4-5": Prices(input=5.0, output=25.0),
    "claude-opus-4-1": Prices(input=15.0, output=75.0),
    "claude-opus-4": Prices(input=15.0, output=75.0),
    "claude-sonnet-4": Prices(input=3.0, output=15.0),
    "claude-haiku-4-5": Prices(input=1.0, output=5.0),
    "claude-3-5-haiku": Prices(input=0.8, output=4.0),
}
"""List prices by model-name prefix (the longest matching prefix wins); extend or override
them with a ``[prices."<prefix>"]`` table in the config."""


def prices_for(model: str, table: Mapping[str, Prices]) -> Prices | None:
    """The prices of the longest prefix of ``model`` in ``table``; None when unknown."""
    matches = [prefix for prefix in table if model.startswith(prefix)]
    return table[max(matches, key=len)] if matches else None
