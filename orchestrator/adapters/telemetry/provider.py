"""Model requests as ``chat`` spans: a provider that wraps the pod's own.

Every request the pod makes goes through its provider (a turn's rounds, a compaction's
summary, an MCP server's sampling), so wrapping it traces them all without a line in the turn
loop. The span ends when the response is complete, before the turn commits it, so a consumer
that stops reading the stream there (the turn loop does) leaves nothing open.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from orchestrator.adapters.providers.base import (
    AlertCallback,
    Provider,
    ProviderRequest,
    ResponseComplete,
    StreamEvent,
)
from orchestrator.adapters.telemetry.attributes import Attributes, usage_attributes
from orchestrator.adapters.telemetry.recorder import PodTelemetry
from orchestrator.core.history import TextBlock, ToolUseBlock
from orchestrator.core.thinking import ModelThinking
from orchestrator.core.web import ModelWeb

__all__ = ["TracedProvider"]


class TracedProvider:
    """The pod's provider, each of its requests a ``chat`` span with its usage and latency."""

    def __init__(self, inner: Provider, telemetry: PodTelemetry) -> None:
        self.inner = inner
        self.telemetry = telemetry

    # The Provider protocol's fields, the inner provider's own (a fallback may switch them).
    @property
    def name(self) -> str:
        """The inner provider's name."""
        return self.inner.name

    @name.setter
    def name(self, value: str) -> None:
        self.inner.name = value

    @property
    def model(self) -> str:
        """The inner provider's model."""
        return self.inner.model

    @model.setter
    def model(self, value: str) -> None:
        self.inner.model = value

    @property
    def on_alert(self) -> AlertCallback | None:
        """Where the inner provider's notices go."""
        return self.inner.on_alert

    @on_alert.setter
    def on_alert(self, value: AlertCallback | None) -> None:
        self.inner.on_alert = value

    def __getattr__(self, name: str) -> Any:
        # Anything else a caller knows its provider by (the scripted provider's window, say).
        return getattr(self.inner, name)

    async def context_window(self) -> int | None:
        """The inner provider's answer."""
        return await self.inner.context_window()

    async def thinking_capabilities(self) -> ModelThinking | None:
        """The inner provider's answer."""
        return await self.inner.thinking_capabilities()

    async def web_capabilities(self) -> ModelWeb | None:
        """The inner provider's answer."""
        return await self.inner.web_capabilities()

    async def stream(self, request: ProviderRequest) -> AsyncIterator[StreamEvent]:
        """The inner stream, inside a ``chat`` span."""
        telemetry = self.telemetry
        attributes: Attributes = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": self.inner.name,
            "gen_ai.request.model": request.model,
            "gen_ai.request.max_tokens": request.max_tokens,
            "gen_ai.request.stream": True,
        }
        span = telemetry.start_span(
            f"chat {request.model}", attributes, parent=telemetry.current, kind=SpanKind.CLIENT
        )
        started = time.monotonic()
        ended = False
        try:
            async for event in self.inner.stream(request):
                if isinstance(event, ResponseComplete):
                    ended = True
                    self._complete(span, request, event, time.monotonic() - started)
                yield event
        except BaseException as exc:
            if not ended:
                ended = True
                stopped = isinstance(exc, (asyncio.CancelledError, GeneratorExit))
                cause = "cancelled" if stopped else None
                self._failed(span, request, cause or type(exc).__name__, started)
            raise
        finally:
            if not ended:  # closed before a response was complete
                self._failed(span, request, "cancelled", started)

    def _complete(
        self, span: Span, request: ProviderRequest, response: ResponseComplete, seconds: float
    ) -> None:
        try:
            model = response.model or request.model
            span.set_attributes(
                {
                    "gen_ai.response.model": model,
                    "gen_ai.response.finish_reasons": [response.stop_reason],
                    **usage_attributes(response.usage),
                }
            )
            if self.telemetry.log_content:
                span.set_attribute("gen_ai.output.messages", _output_messages(response))
            labels = self._labels(request, model)
            self.telemetry.metrics.operation_duration.record(seconds, labels)
            usage = response.usage
            for kind, count in (("input", usage.context_tokens), ("output", usage.output_tokens)):
                self.telemetry.metrics.token_usage.record(
                    count, {**labels, "gen_ai.token.type": kind}
                )
            self.telemetry.request_done(model, usage)
        finally:
            span.end()

    def _failed(self, span: Span, request: ProviderRequest, cause: str, started: float) -> None:
        try:
            span.set_attribute("error.type", cause)
            span.set_status(Status(StatusCode.ERROR))
            labels = {**self._labels(request, None), "error.type": cause}
            self.telemetry.metrics.operation_duration.record(time.monotonic() - started, labels)
        finally:
            span.end()

    def _labels(self, request: ProviderRequest, model: str | None) -> Attributes:
        labels: Attributes = {
            "pod.name": self.telemetry.pod_name,
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": self.inner.name,
            "gen_ai.request.model": request.model,
        }
        if model is not None:
            labels["gen_ai.response.model"] = model
        return labels


def _output_messages(response: ResponseComplete) -> str:
    """The response as the conventions' ``gen_ai.output.messages`` (text and tool calls)."""
    parts: list[dict[str, Any]] = []
    for block in response.blocks:
        if isinstance(block, TextBlock):
            parts.append({"type": "text", "content": block.text})
        elif isinstance(block, ToolUseBlock):
            parts.append(
                {"type": "tool_call", "id": block.id, "name": block.name, "arguments": block.input}
            )
    message = {"role": "assistant", "parts": parts, "finish_reason": response.stop_reason}
    return json.dumps([message], ensure_ascii=False, default=str)
