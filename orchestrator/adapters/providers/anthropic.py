"""The Anthropic Messages API as a :class:`~orchestrator.adapters.providers.base.Provider`.

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

A server that answers the streaming request with one JSON body (``content-type:
application/json``, a proxy that ignores ``stream``) is not an event stream that ended early:
its message is taken whole (the SDK's ``Message``, said once as a warning), and JSON that is
not a message raises :class:`ProviderStreamError` saying what came instead, without retries.

Cancelling the task that iterates :meth:`AnthropicProvider.stream` closes the HTTP stream.

This module holds the client, the request parameters and the retry loop; assembling a streamed
response is :mod:`orchestrator.adapters.providers.anthropic_stream`, and classifying a failure is
:mod:`orchestrator.adapters.providers.anthropic_errors`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any, Literal

import anthropic
import httpx2  # the SDK's transport; mid-stream cuts surface as its exceptions, unwrapped
from anthropic.types import ModelInfo

from orchestrator.adapters.providers.anthropic_errors import (
    Failure,
    classify_status,
    classify_stream_error,
    classify_transport,
)
from orchestrator.adapters.providers.anthropic_stream import IncompleteStreamError, ResponseBuilder
from orchestrator.adapters.providers.base import (
    AlertCallback,
    ProviderConfigError,
    ProviderError,
    ProviderRequest,
    ProviderStreamError,
    StreamEvent,
)
from orchestrator.adapters.providers.model_info import (
    MODEL_INFOS,
    ModelInfoCache,
    ModelKey,
    credential_digest,
)
from orchestrator.core.prompt_cache import BlockPosition, place_breakpoints
from orchestrator.core.thinking import ModelThinking
from orchestrator.core.web import ModelWeb

__all__ = ["AlertCallback", "AnthropicProvider"]


def _credential(client: anthropic.AsyncAnthropic) -> str:
    """Who asks, for the process's model-info cache: a digest of the key or token."""
    secret = client.api_key or client.auth_token
    if secret:
        return credential_digest(secret)
    # Other credentials (a cloud's) have no secret string to digest here: this client's own.
    return f"client:{id(client)}"


def _answered_json(response: httpx2.Response) -> bool:
    """The server sent a JSON body, not the event stream a streaming request asked for."""
    content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
    return content_type == "application/json"


class AnthropicProvider:
    """A :class:`~orchestrator.adapters.providers.base.Provider` for the Anthropic Messages API.

    ``api_key`` and ``base_url`` default to what the SDK reads from ``ANTHROPIC_API_KEY`` and
    ``ANTHROPIC_BASE_URL``. ``max_retries`` bounds our retries (the SDK's are off);
    delays grow from ``retry_base_delay_s`` by doubling, and neither they nor a server's
    ``retry-after`` exceed ``retry_max_delay_s``. ``timeout_s`` bounds connecting and each
    read, so a stalled stream fails instead of hanging. ``model_infos``: where Models API
    answers are remembered (default: the process's cache, shared by every pod of a host).
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
        model_infos: ModelInfoCache[ModelInfo] | None = None,
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
        self._model_infos: ModelInfoCache[ModelInfo] = model_infos or MODEL_INFOS
        self._failed_models: set[str] = set()
        """Models whose lookup failed for this provider: it said so once, and knows no more."""
        self._previous_end: BlockPosition | None = None
        """Where the last request's newest cache breakpoint was: the next one reads it."""
        self._told_json = False
        """The user was told that the server answers streaming requests with whole JSON."""

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

    async def context_window(self) -> int | None:
        """``max_input_tokens`` from the Models API, asked once per model, endpoint and key in
        the process (:mod:`orchestrator.adapters.providers.model_info`).

        Raises :class:`ProviderError` saying why when the endpoint cannot tell (unreachable,
        an unknown model, a compatible server without it); None when it lists no window.
        """
        info = await self._model_info()
        return info.max_input_tokens if info is not None else None

    async def thinking_capabilities(self) -> ModelThinking | None:
        """``capabilities.thinking`` and ``capabilities.effort`` from the Models API (asked
        with the window); None when it lists no capabilities."""
        info = await self._model_info()
        if info is None or info.capabilities is None:
            return None
        return ModelThinking.from_capabilities(info.id or self.model, info.capabilities)

    async def web_capabilities(self) -> ModelWeb | None:
        """``capabilities.server_tools`` from the Models API (asked with the window); None
        when it lists no capabilities."""
        info = await self._model_info()
        if info is None or info.capabilities is None:
            return None
        return ModelWeb.from_capabilities(info.id or self.model, info.capabilities)

    async def _model_info(self) -> ModelInfo | None:
        model = self.model
        if model in self._failed_models:
            return None
        client = self._ensure_client()
        key = ModelKey(
            base_url=str(client.base_url),
            credential=_credential(client),
            model=model,
        )

        async def fetch() -> ModelInfo:
            try:
                return await client.models.retrieve(model, timeout=min(self.timeout_s, 10.0))
            except anthropic.APIStatusError as err:
                # The API's own words, not the SDK's text with the raw body as a Python dict.
                said = err.api_message or err.response.reason_phrase
                raise ProviderError(
                    f"the Models API did not answer for {model}: {err.status_code} {said}",
                    status=err.status_code,
                ) from err
            except (anthropic.AnthropicError, httpx2.TransportError) as err:
                raise ProviderError(f"the Models API did not answer for {model}: {err}") from err

        try:
            return await self._model_infos.get(key, fetch)
        except ProviderError:
            self._failed_models.add(model)
            raise

    async def listed_models(self) -> list[tuple[str, str]]:
        """(id, created_at) of every model the Models API lists for this key: what an agent
        file's ``model: sonnet`` picks the newest of. :class:`ProviderError` when it cannot."""
        client = self._ensure_client()
        try:
            page = await client.models.list(limit=1000, timeout=min(self.timeout_s, 10.0))
            return [(model.id, model.created_at.isoformat()) async for model in page]
        except (anthropic.AnthropicError, httpx2.TransportError) as err:
            raise ProviderError(f"the Models API did not list the models: {err}") from err

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
        # No tool_choice is ever sent: forcing a tool is refused with thinking on.
        if request.thinking is not None:
            params["thinking"] = request.thinking
        if request.output_config is not None:
            params["output_config"] = request.output_config
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

    async def _json_message(self, response: httpx2.Response) -> anthropic.types.Message:
        """The SDK's ``Message`` from a JSON body that answered a streaming request.

        Said once per provider (the answers come whole, nothing streams); a body that is not
        a message raises :class:`ProviderStreamError` saying what came instead.
        """
        body = await response.aread()
        try:
            message = anthropic.types.Message.model_validate_json(body)
        except ValueError:
            raise ProviderStreamError(
                f"{response.url} answered a streaming request with JSON (content-type "
                f"{response.headers.get('content-type')}) instead of an event stream, and the "
                f"JSON is not a message: {body[:200].decode('utf-8', 'replace')!r}",
                retryable=False,
            ) from None
        if not self._told_json:
            self._told_json = True
            self._alert(
                "warn",
                f"{response.url} answered a streaming request with one JSON message instead "
                "of an event stream (a proxy that ignores stream?): answers arrive whole",
            )
        return message

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
                    builder = ResponseBuilder()
                    if _answered_json(sdk_stream.response):
                        # A proxy that ignores ``stream``: the whole message in one body.
                        message = await self._json_message(sdk_stream.response)
                        for event in builder.whole(message):
                            yielded = True
                            yield event
                    else:
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
                failure = classify_stream_error(err) if streaming else classify_status(err)
                cause: Exception = err
            except (anthropic.APIConnectionError, httpx2.TransportError) as err:
                failure, cause = classify_transport(err), err
            except IncompleteStreamError as err:
                reason = "provider stream ended early"
                failure = Failure(ProviderStreamError(f"{reason}: {err}"), True, reason)
                cause = err
            except anthropic.AnthropicError as err:
                failure = Failure(ProviderError(f"provider error: {err}"), False, "provider error")
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
