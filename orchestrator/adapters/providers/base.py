"""What every model provider gives the turn loop: a stream of typed events for one request.

A provider turns a :class:`ProviderRequest` (system prompt, wire messages, tool specs) into
an async iterator of :data:`StreamEvent` that ends with exactly one :class:`ResponseComplete`.
Failures raise :class:`ProviderError` (tree below); cancelling the iterating task must close
the underlying connection.

Errors::

    ProviderError                 a request failed; ``retryable`` says whether trying again may help
    ├── ProviderConfigError       set-up is wrong (no key, unknown model); not retryable
    ├── ProviderRejectedError     the API refused the request (4xx other than 429)
    │   └── PromptTooLongError    …because the prompt does not fit the context window
    └── ProviderStreamError       the connection or stream broke mid-response
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias, runtime_checkable

from orchestrator.core.fallback import FallbackCause, cause_of
from orchestrator.core.history import Block, ServerToolResultBlock
from orchestrator.core.prompt_cache import CacheTTL
from orchestrator.core.usage import TokenUsage
from orchestrator.errors import PodRuntimeError

if TYPE_CHECKING:  # the SDK is imported only by the provider that talks to the API
    from anthropic.types import OutputConfigParam, ThinkingConfigParam

    from orchestrator.core.thinking import ModelThinking
    from orchestrator.core.web import ModelWeb


@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderRequest:
    """One Messages API request, already in wire form."""

    model: str
    system: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] = field(default_factory=list)
    max_tokens: int = 8192
    cache_ttl: CacheTTL | None = "5m"
    """Prompt-cache entries this request writes live this long; None sends no breakpoints."""
    purpose: Literal["turn", "compaction"] = "turn"
    """A turn's request, or the summary request of a compaction."""
    thinking: ThinkingConfigParam | None = None
    """Extended thinking, as the pod's plan decided it (see :mod:`orchestrator.core.thinking`)."""
    output_config: OutputConfigParam | None = None
    """``effort``, when set."""


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A fragment of assistant text."""

    text: str


@dataclass(frozen=True, slots=True)
class ThinkingDelta:
    """A fragment of thinking text."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolCallStart:
    """The model began a tool call."""

    id: str
    name: str


@dataclass(frozen=True, slots=True)
class ToolCallArgsDelta:
    """A fragment of a tool call's JSON arguments."""

    id: str
    json: str


@dataclass(frozen=True, slots=True)
class ServerToolCall:
    """The API began running one of its own tools (web search, web fetch); input complete."""

    id: str
    name: str
    input: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ServerToolResult:
    """A server tool's result arrived, as it will be stored."""

    block: ServerToolResultBlock


@dataclass(frozen=True, slots=True)
class CitationDelta:
    """The text being streamed cites a source (the citation exactly as the API sent it)."""

    citation: dict[str, Any]


Usage = TokenUsage
"""Token counts of one request, by kind (see :mod:`orchestrator.core.usage`)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ResponseComplete:
    """The whole response: content blocks in order, why it stopped, and usage."""

    blocks: list[Block]
    stop_reason: str
    usage: Usage = field(default_factory=Usage)
    model: str | None = field(default=None, compare=False)
    """The model that answered, as the API named it (None: the provider cannot tell); for
    telemetry, so left out of comparisons."""


StreamEvent: TypeAlias = (
    TextDelta
    | ThinkingDelta
    | ToolCallStart
    | ToolCallArgsDelta
    | ServerToolCall
    | ServerToolResult
    | CitationDelta
    | ResponseComplete
)


class ProviderError(PodRuntimeError):
    """A model request failed; ``retryable`` tells whether a later attempt may succeed."""

    retryable: bool = False

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retryable: bool | None = None,
        error_type: str | None = None,
    ):
        super().__init__(message)
        self.status = status
        self.error_type = error_type
        """The API's own name for the failure (``overloaded_error``, ``not_found_error``…),
        when it gave one."""
        if retryable is not None:
            self.retryable = retryable


class ProviderConfigError(ProviderError):
    """The provider is not set up correctly (missing key, bad base URL)."""


class ProviderRejectedError(ProviderError):
    """The API refused the request (a 4xx other than 429), e.g. an invalid history."""


class PromptTooLongError(ProviderRejectedError):
    """The prompt is longer than the model's context window (a 400 the pod can recover from)."""


def is_prompt_too_long(status: int | None, message: str) -> bool:
    """Whether an API refusal says the prompt does not fit the context window."""
    return status == 400 and "prompt is too long" in message


_TOO_LONG_FIGURES = re.compile(r"prompt is too long: \d+ tokens > (\d+) maximum")


def refused_window(message: str) -> int | None:
    """The window a "prompt is too long" refusal names (``… 66917 tokens > 60000 maximum``),
    or None when it names none."""
    match = _TOO_LONG_FIGURES.search(message)
    return int(match.group(1)) if match else None


class ProviderStreamError(ProviderError):
    """The connection dropped or the stream ended before the response completed."""

    retryable = True


def fallback_cause(error: ProviderError) -> FallbackCause | None:
    """Which ``fallback_on`` cause a failed request's error is, if any (see
    :func:`orchestrator.core.fallback.cause_of`)."""
    return cause_of(error.status, error.error_type)


AlertCallback = Callable[[str, str], None]
"""Receives ``(level, message)``: something a person should see, e.g. a retry."""


@runtime_checkable
class SwitchesModel(Protocol):
    """A provider that can make a sibling asking another model on the same endpoint and
    credentials (the fallback model, docs/providers.md)."""

    def with_model(self, model: str) -> Provider:
        """A provider like this one for ``model``."""
        ...


@runtime_checkable
class NotesAtStart(Protocol):
    """A provider with something to say once when the pod starts (what its platform lacks)."""

    def start_note(self) -> str | None:
        """The note, or None."""
        ...


class Provider(Protocol):
    """A source of model responses."""

    name: str
    model: str
    on_alert: AlertCallback | None
    """Set by the pod when None: where retries and other notices go."""

    def stream(self, request: ProviderRequest) -> AsyncIterator[StreamEvent]:
        """Stream one response; the last event is :class:`ResponseComplete`."""
        ...

    async def context_window(self) -> int | None:
        """The model's context window (``max_input_tokens``); None or a ProviderError when
        it cannot tell."""
        ...

    async def thinking_capabilities(self) -> ModelThinking | None:
        """What thinking the model accepts (the Models API's ``capabilities``); None or a
        ProviderError when it cannot tell."""
        ...

    async def web_capabilities(self) -> ModelWeb | None:
        """Whether the API's web tools run for the model (``capabilities.server_tools``), or
        why no server tool runs on this platform; None or a ProviderError when it cannot
        tell."""
        ...
