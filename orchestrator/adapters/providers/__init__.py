"""Model providers: the :class:`Provider` protocol, its stream events and its errors.

Concrete providers live in submodules and are imported where they are chosen, never here:
``orchestrator.adapters.providers.anthropic`` pulls in the Anthropic SDK, which costs about a second
to import, and light commands (``pod --help``) must not pay for it.
"""

from __future__ import annotations

from orchestrator.adapters.providers.base import (
    AlertCallback,
    CitationDelta,
    Provider,
    ProviderConfigError,
    ProviderError,
    ProviderRejectedError,
    ProviderRequest,
    ProviderStreamError,
    ResponseComplete,
    ServerToolCall,
    ServerToolResult,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallArgsDelta,
    ToolCallStart,
    Usage,
)

__all__ = [
    "AlertCallback",
    "CitationDelta",
    "Provider",
    "ProviderConfigError",
    "ProviderError",
    "ProviderRejectedError",
    "ProviderRequest",
    "ProviderStreamError",
    "ResponseComplete",
    "ServerToolCall",
    "ServerToolResult",
    "StreamEvent",
    "TextDelta",
    "ThinkingDelta",
    "ToolCallArgsDelta",
    "ToolCallStart",
    "Usage",
]
