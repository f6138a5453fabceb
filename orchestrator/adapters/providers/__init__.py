"""Model providers: the :class:`Provider` protocol, its stream events and its errors.

Concrete providers live in submodules and are imported where they are chosen, never here:
``orchestrator.adapters.providers.anthropic`` pulls in the Anthropic SDK, which costs about a second
to import, and light commands (``pod --help``) must not pay for it.
"""

from __future__ import annotations

from orchestrator.adapters.providers.base import (
    AlertCallback,
    Provider,
    ProviderConfigError,
    ProviderError,
    ProviderRejectedError,
    ProviderRequest,
    ProviderStreamError,
    ResponseComplete,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallArgsDelta,
    ToolCallStart,
    Usage,
)

__all__ = [
    "AlertCallback",
    "Provider",
    "ProviderConfigError",
    "ProviderError",
    "ProviderRejectedError",
    "ProviderRequest",
    "ProviderStreamError",
    "ResponseComplete",
    "StreamEvent",
    "TextDelta",
    "ThinkingDelta",
    "ToolCallArgsDelta",
    "ToolCallStart",
    "Usage",
]
