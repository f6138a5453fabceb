"""The Anthropic Messages API as a :class:`~orchestrator.providers.base.Provider`.

Built on the official SDK's raw event stream (``AsyncAnthropic.messages.create(stream=True)``),
mapped to our events: ``text_delta`` → :class:`TextDelta`, ``thinking_delta`` →
:class:`ThinkingDelta`, a ``tool_use`` block start → :class:`ToolCallStart`,
``input_json_delta`` → :class:`ToolCallArgsDelta`, and at ``message_stop`` one
:class:`ResponseComplete` with history blocks, the stop reason and usage.

Retry policy (the SDK's own retries are switched off so that this is the only one):

* 429, 408, 5xx and 529, connection failures and streams that break, are retried with
  exponential backoff up to ``max_retries`` times, but **only while nothing has been yielded**:
  once text reached the caller a retry would show it twice, so a later failure raises
  :class:`ProviderStreamError` instead. A ``retry-after`` header is honoured, capped at
  ``retry_max_delay_s``. Each retry is reported through ``on_alert("warn", ...)``.
* Other 4xx raise :class:`ProviderRejectedError` with the API's message.
* No API key raises :class:`ProviderConfigError` naming ``ANTHROPIC_API_KEY``.

Cancelling the task that iterates :meth:`AnthropicProvider.stream` closes the HTTP stream.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import anthropic
import httpx2  # the SDK's transport; mid-stream cuts surface as its exceptions, unwrapped

from orchestrator.history import Block, TextBlock, ThinkingBlock, ToolUseBlock
from orchestrator.prompt_cache import BlockPosition, place_breakpoints
from orchestrator.providers.base import (
    AlertCallback,
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

__all__ = ["AlertCallback", "AnthropicProvider"]


_RETRYABLE_STATUSES = frozenset({408, 429})
_RETRYABLE_ERROR_TYPES = frozenset({"overloaded_error", "rate_limit_error", "api_error"})
_STATUS_LABELS = {408: "request timeout", 429: "rate limited", 529: "overloaded"}


@dataclass(slots=True)
class _Failure:
    """A classified failed attempt: what to raise, and whether trying again may help."""

    error: ProviderError
    retryable: bool
    reason: str
    retry_after: float | None = None


def _retry_after(headers: httpx2.Headers) -> float | None:
    """Seconds the server asked us to wait, from ``retry-after-ms`` or ``retry-after``."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_tz(value)
        if parsed is None:
            return None
        return max(0.0, email.utils.mktime_tz(parsed) - time.time())


def _status_label(status: int) -> str:
    return _STATUS_LABELS.get(status, "server error" if status >= 500 else "error")


def _classify_status(err: anthropic.APIStatusError) -> _Failure:
    """An HTTP error response (received before any event was streamed)."""
    status = err.status_code
    message = err.api_message or str(err)
    if status in _RETRYABLE_STATUSES or status >= 500:
        reason = f"provider returned {status} {_status_label(status)}"
        return _Failure(
            ProviderError(f"{reason}: {message}", status=status, retryable=True),
            retryable=True,
            reason=reason,
            retry_after=_retry_after(err.response.headers),
        )
    return _Failure(
        ProviderRejectedError(
            f"provider rejected the request ({status}): {message}", status=status
        ),
        retryable=False,
        reason=f"provider returned {status}",
    )


def _classify_stream_error(err: anthropic.APIStatusError) -> _Failure:
    """An SSE ``error`` event: the HTTP status was 200, the error type says what broke."""
    error_type = err.type or "error"
    message = err.api_message or str(err)
    reason = f"provider stream failed with {error_type}"
    return _Failure(
        ProviderStreamError(f"{reason}: {message}"),
        retryable=error_type in _RETRYABLE_ERROR_TYPES,
        reason=reason,
    )


def _classify_transport(err: Exception) -> _Failure:
    """A connection that failed, timed out or was cut."""
    detail = str(err) or type(err).__name__
    cause = err.__cause__
    if isinstance(err, anthropic.APIConnectionError) and cause is not None:
        detail = f"{type(cause).__name__}: {cause}" if str(cause) else type(cause).__name__
    elif not isinstance(err, anthropic.APIConnectionError):
        detail = f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
    reason = f"connection to provider failed ({detail})"
    return _Failure(ProviderStreamError(reason), retryable=True, reason=reason)


class _IncompleteStreamError(Exception):
    """The event stream ended cleanly but before ``message_stop``."""


@dataclass(slots=True)
class _PartialBlock:
    kind: str
    parts: list[str] = field(default_factory=list)
    signature: str = ""
    id: str = ""
    name: str = ""


@dataclass(slots=True)
class _ResponseBuilder:
    """Turns raw SDK stream events into our events and assembles the final response."""

    blocks: dict[int, _PartialBlock] = field(default_factory=dict)
    stop_reason: str | None = None
    usage: Usage = field(default_factory=Usage)
    done: bool = False

    def feed(self, event: Any) -> list[StreamEvent]:
        """Our events for one raw event (often none)."""
        kind = event.type
        if kind == "message_start":
            self._take_usage(event.message.usage)
        elif kind == "content_block_start":
            return self._start(event.index, event.content_block)
        elif kind == "content_block_delta":
            return self._delta(event.index, event.delta)
        elif kind == "message_delta":
            if event.delta.stop_reason is not None:
                self.stop_reason = event.delta.stop_reason
            self._take_usage(event.usage)
        elif kind == "message_stop":
            self.done = True
        return []

    def _take_usage(self, usage: Any) -> None:
        # message_start carries the input counts, message_delta the output (and, on some API
        # versions, the input counts again): a count the event leaves out keeps its value.
        counts = {
            name: getattr(usage, name, None)
            for name in (
                "input_tokens",
                "cache_creation_input_tokens",
                "cache_read_input_tokens",
                "output_tokens",
            )
        }
        self.usage = replace(self.usage, **{k: v for k, v in counts.items() if v is not None})

    def _start(self, index: int, block: Any) -> list[StreamEvent]:
        kind = block.type
        if kind == "text":
            self.blocks[index] = _PartialBlock("text", [block.text] if block.text else [])
            return [TextDelta(block.text)] if block.text else []
        if kind == "thinking":
            partial = _PartialBlock("thinking", [block.thinking] if block.thinking else [])
            partial.signature = block.signature or ""
            self.blocks[index] = partial
            return [ThinkingDelta(block.thinking)] if block.thinking else []
        if kind == "tool_use":
            self.blocks[index] = _PartialBlock("tool_use", id=block.id, name=block.name)
            return [ToolCallStart(block.id, block.name)]
        # Redacted thinking and server-tool blocks have no place in our history yet.
        self.blocks[index] = _PartialBlock(kind)
        return []

    def _delta(self, index: int, delta: Any) -> list[StreamEvent]:
        partial = self.blocks.get(index)
        if partial is None:
            raise _IncompleteStreamError(f"delta for content block {index} before its start")
        kind = delta.type
        if kind == "text_delta" and delta.text:
            partial.parts.append(delta.text)
            return [TextDelta(delta.text)]
        if kind == "thinking_delta" and delta.thinking:
            partial.parts.append(delta.thinking)
            return [ThinkingDelta(delta.thinking)]
        if kind == "signature_delta":
            partial.signature += delta.signature
        elif kind == "input_json_delta" and delta.partial_json:
            partial.parts.append(delta.partial_json)
            return [ToolCallArgsDelta(partial.id, delta.partial_json)]
        return []

    def finish(self) -> ResponseComplete:
        """The whole response; raises if the stream stopped short."""
        if not self.done:
            raise _IncompleteStreamError("the event stream ended before message_stop")
        blocks: list[Block] = []
        for index in sorted(self.blocks):
            partial = self.blocks[index]
            text = "".join(partial.parts)
            if partial.kind == "text" and text:
                blocks.append(TextBlock(text=text))
            elif partial.kind == "thinking":
                blocks.append(ThinkingBlock(thinking=text, signature=partial.signature))
            elif partial.kind == "tool_use":
                blocks.append(
                    ToolUseBlock(id=partial.id, name=partial.name, input=self._args(partial))
                )
        return ResponseComplete(
            blocks=blocks,
            stop_reason=self.stop_reason or "end_turn",
            usage=self.usage,
        )

    def _args(self, partial: _PartialBlock) -> dict[str, Any]:
        text = "".join(partial.parts)
        if not text.strip():
            return {}
        try:
            value = json.loads(text)
        except ValueError:
            value = None
        if not isinstance(value, dict):
            # Typically a call cut off by max_tokens; running it with guessed args would be worse.
            raise ProviderStreamError(
                f"tool call {partial.id} ({partial.name}) has arguments that are not a JSON "
                f"object (stop_reason {self.stop_reason}): {text[:200]!r}",
                retryable=False,
            )
        return value


class AnthropicProvider:
    """A :class:`~orchestrator.providers.base.Provider` for the Anthropic Messages API.

    ``api_key`` and ``base_url`` default to what the SDK reads from ``ANTHROPIC_API_KEY`` and
    ``ANTHROPIC_BASE_URL``. ``max_retries`` bounds our retries (the SDK's are off);
    delays grow from ``retry_base_delay_s`` by doubling, and neither they nor a server's
    ``retry-after`` exceed ``retry_max_delay_s``. ``timeout_s`` bounds connecting and each
    read, so a stalled stream fails instead of hanging.
    """

    name = "anthropic"

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        max_retries: int = 4,
        timeout_s: float = 600.0,
        retry_base_delay_s: float = 0.5,
        retry_max_delay_s: float = 30.0,
        on_alert: AlertCallback | None = None,
    ) -> None:
        self.model = model
        self.max_retries = max(0, max_retries)
        self.timeout_s = timeout_s
        self.retry_base_delay_s = retry_base_delay_s
        self.retry_max_delay_s = retry_max_delay_s
        self.on_alert = on_alert
        self._api_key = api_key
        self._base_url = base_url
        self._client: anthropic.AsyncAnthropic | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None
        self._previous_end: BlockPosition | None = None
        """Where the last request's newest cache breakpoint was: the next one reads it."""

    def _ensure_client(self) -> anthropic.AsyncAnthropic:
        """The SDK client, made on first use so a missing key fails as a ProviderError."""
        loop = asyncio.get_running_loop()
        # Pooled connections belong to the loop that opened them; a new loop needs a new pool.
        if self._client is not None and self._client_loop is loop:
            return self._client
        try:
            client = anthropic.AsyncAnthropic(
                api_key=self._api_key,
                base_url=self._base_url,
                max_retries=0,
                timeout=anthropic.Timeout(self.timeout_s, connect=min(self.timeout_s, 10.0)),
            )
        except anthropic.CredentialsError as err:
            raise ProviderConfigError(f"Anthropic credentials could not be loaded: {err}") from err
        if client.api_key is None and client.auth_token is None and client.credentials is None:
            raise ProviderConfigError(
                "no Anthropic API key: set the ANTHROPIC_API_KEY environment variable "
                "(or pass api_key)"
            )
        self._client, self._client_loop = client, loop
        return client

    async def aclose(self) -> None:
        """Close the HTTP connection pool."""
        if self._client is not None:
            await self._client.close()
            self._client = None

    def _params(self, request: ProviderRequest) -> dict[str, Any]:
        # No temperature / top_p / top_k: the API version the SDK sends rejects them.
        params: dict[str, Any] = {
            "model": request.model or self.model,
            "max_tokens": request.max_tokens,
            "messages": request.messages,
        }
        if request.system:
            params["system"] = request.system
        if request.tools:
            params["tools"] = list(request.tools)
        if request.cache_ttl is not None:
            cached = place_breakpoints(
                request.system,
                request.messages,
                ttl=request.cache_ttl,
                previous_end=self._previous_end,
            )
            self._previous_end = cached.end
            params["messages"] = cached.messages
            if cached.system:
                params["system"] = cached.system
        return params

    def _delay(self, retry: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.retry_max_delay_s)
        return min(self.retry_base_delay_s * 2.0 ** (retry - 1), self.retry_max_delay_s)

    def _alert(self, level: Literal["warn", "error"], message: str) -> None:
        if self.on_alert is not None:
            self.on_alert(level, message)

    async def stream(self, request: ProviderRequest) -> AsyncIterator[StreamEvent]:
        """Stream one response; the last event is a :class:`ResponseComplete`."""
        client = self._ensure_client()
        params = self._params(request)
        retry = 0
        while True:
            yielded = False
            try:
                sdk_stream = await client.messages.create(**params, stream=True)
                async with sdk_stream:
                    builder = _ResponseBuilder()
                    async for raw in sdk_stream:
                        for event in builder.feed(raw):
                            yielded = True
                            yield event
                        if builder.done:
                            break  # no need to wait for the body's last bytes
                    final = builder.finish()
                yield final
                return
            except anthropic.APIStatusError as err:
                streaming = err.status_code < 400  # an SSE error event inside a 200 response
                failure = _classify_stream_error(err) if streaming else _classify_status(err)
                cause: Exception = err
            except (anthropic.APIConnectionError, httpx2.TransportError) as err:
                failure, cause = _classify_transport(err), err
            except _IncompleteStreamError as err:
                reason = "provider stream ended early"
                failure = _Failure(ProviderStreamError(f"{reason}: {err}"), True, reason)
                cause = err
            except anthropic.AnthropicError as err:
                failure = _Failure(ProviderError(f"provider error: {err}"), False, "provider error")
                cause = err
            if yielded:
                # Part of the response already reached the caller; a retry would repeat it.
                raise ProviderStreamError(
                    f"response broke off mid-stream, not retried: {failure.error}",
                    status=failure.error.status,
                ) from cause
            if not failure.retryable:
                raise failure.error from cause
            if retry >= self.max_retries:
                if retry:
                    self._alert("error", f"{failure.reason}; giving up after {retry} retries")
                raise failure.error from cause
            retry += 1
            delay = self._delay(retry, failure.retry_after)
            self._alert(
                "warn", f"{failure.reason}; retry {retry}/{self.max_retries} in {delay:.3g} s"
            )
            await asyncio.sleep(delay)
