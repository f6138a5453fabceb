"""Attribute helpers shared by the recorder and the provider wrapper."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from orchestrator.core.usage import TokenUsage

__all__ = ["Attributes", "field_of", "usage_attributes"]

Attributes = dict[str, str | bool | int | float | list[str]]
"""Span and metric attributes, as the SDK takes them."""


def field_of(data: BaseModel | Mapping[str, Any], name: str) -> Any:
    """A field of an event's data, whichever form the emitter used (a model or a dict)."""
    if isinstance(data, Mapping):
        return data.get(name)
    return getattr(data, name, None)


def usage_attributes(usage: TokenUsage) -> Attributes:
    """The GenAI usage attributes of a request (input counts the cached parts too, as the
    conventions define it; the cache's share is told apart)."""
    return {
        "gen_ai.usage.input_tokens": usage.context_tokens,
        "gen_ai.usage.output_tokens": usage.output_tokens,
        "gen_ai.usage.cache_read.input_tokens": usage.cache_read_input_tokens,
        "gen_ai.usage.cache_creation.input_tokens": usage.cache_creation_input_tokens,
    }
