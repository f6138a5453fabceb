"""Token usage: counts by kind and their sums (what they cost: :mod:`orchestrator.core.prices`).

The Messages API reports four counts per response: ``input_tokens`` (the part of the prompt
after the last cache breakpoint), ``cache_creation_input_tokens`` (written to the prompt cache),
``cache_read_input_tokens`` (read from it) and ``output_tokens``. All three input kinds fill
the context window; they differ in price (1-hour cache writes more than 5-minute ones, so
the API's breakdown of the writes is kept too).

The API's server tools add counts of their own (``usage.server_tool_use``): web searches are
billed per search (:data:`WEB_SEARCH_PER_1K`, $10 per 1,000 as published); web fetches cost
only the tokens of what they bring in (the docs: "no additional charges beyond standard token
costs"), so their price defaults to 0 and is there for a gateway that bills them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Annotated

from pydantic import Field


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
    one_hour_cache_writes: Annotated[int, Field(exclude_if=lambda v: v == 0)] = 0
    """The part of ``cache_creation_input_tokens`` written as 1-hour entries (priced higher)."""

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
            one_hour_cache_writes=self.one_hour_cache_writes + other.one_hour_cache_writes,
        )


def total(usages: Iterable[TokenUsage]) -> TokenUsage:
    """The sum of several usages."""
    out = TokenUsage()
    for usage in usages:
        out = out + usage
    return out


__all__ = ["TokenUsage", "total"]
