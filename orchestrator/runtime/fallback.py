"""The fallback model: the same request sent to ``fallback_model`` when the pod's model keeps
failing, made valid for what the fallback accepts (docs/providers.md).

The turn loop asks :meth:`Fallback.switch` when a request failed after the provider's own
retries. For a cause in ``fallback_on`` (:mod:`orchestrator.core.fallback`) it learns the
fallback's capabilities (the Models API, once, as the pod does for its own model at start),
and rebuilds the request for them:

* thinking and effort: the pod's settings where the fallback takes them, else what ``auto``
  would choose for it (an effort it lacks is left out), each change named in the alert;
* the web tools: planned again for the fallback (the tool versions it runs, or none);
* the history: older thinking left out for a model that does not think; the request must pass
  the pre-send validator with the fallback's thinking, else the switch is refused, saying why;
* the context window: a request larger than the fallback's window is not sent to it.

A switch is said in one ``warn`` alert, kept as a ``fallback`` session record, and holds for
the rest of the turn (:meth:`engaged`): the next turn tries the pod's own model first again.
The message the fallback answers names its model, so its cost counts at its own prices
(:func:`usage_by_model`).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from orchestrator.adapters.providers.base import (
    PromptTooLongError,
    Provider,
    ProviderError,
    ProviderRequest,
    fallback_cause,
)
from orchestrator.adapters.session import FallbackRecord
from orchestrator.config.model import PodConfig
from orchestrator.core.fallback import without_older_thinking
from orchestrator.core.history import AssistantMessage, Item
from orchestrator.core.thinking import ModelThinking, ThinkingPlan, ThinkingRefused, plan_thinking
from orchestrator.core.usage import TokenUsage
from orchestrator.core.validator import validate_wire
from orchestrator.core.web import ModelWeb, WebPlan

if TYPE_CHECKING:
    from orchestrator.runtime.context import Context

__all__ = ["Fallback", "usage_by_model"]

Alert = Callable[[str, str, str], None]
T = TypeVar("T")


@dataclass(kw_only=True, eq=False)
class Fallback:
    """One pod's fallback model: its provider, what it accepts, and the turn it holds."""

    provider: Provider
    config: PodConfig
    keep: Callable[[FallbackRecord], None]
    """Writes the ``fallback`` record (the transcript's ``keep``)."""
    engaged_turn: int | None = None
    """The turn whose requests go to the fallback (None: none)."""
    thinking: ThinkingPlan | None = None
    web: WebPlan | None = None
    window: int | None = None
    thinks: bool = True
    """Whether the fallback accepts thinking at all (unknown capabilities: assumed so)."""
    changes: list[str] = field(default_factory=list)
    """The pod's settings the fallback does not take, and what it gets instead."""

    @property
    def model(self) -> str:
        """The fallback model's name."""
        return self.provider.model

    def engaged(self, turn: int) -> bool:
        """Whether ``turn``'s requests go to the fallback (it took over earlier in the turn)."""
        return self.engaged_turn == turn

    async def ask(
        self,
        request: ProviderRequest,
        stream: Callable[[Provider, ProviderRequest], Awaitable[T]],
        *,
        primary: Provider,
        turn: int,
        specs: list[dict[str, Any]],
        context: Context,
        alert: Alert,
    ) -> T:
        """``stream(provider, request)`` on the pod's model (``primary``), or on the fallback
        when it holds the turn or the pod's model failed for a cause in ``fallback_on``;
        raises the ProviderError of the last model asked."""
        if self.engaged(turn):
            adapted, _ = await self.adapt(request, specs)
            if adapted is not None:  # else the pod's own model is asked (it may be back)
                return await stream(self.provider, adapted)
        try:
            return await stream(primary, request)
        except PromptTooLongError:
            raise  # the turn compacts, then asks again
        except ProviderError as exc:
            switched = await self.switch(
                exc, request, turn=turn, specs=specs, context=context, alert=alert
            )
            if switched is None:
                raise
        try:
            return await stream(self.provider, switched)
        except PromptTooLongError:
            raise
        except ProviderError as exc:
            raise ProviderError(
                f"the fallback model {self.model} failed too: {exc}",
                status=exc.status,
                error_type=exc.error_type,
            ) from exc

    async def switch(
        self,
        error: ProviderError,
        request: ProviderRequest,
        *,
        turn: int,
        specs: list[dict[str, Any]],
        context: Context,
        alert: Alert,
    ) -> ProviderRequest | None:
        """The failed ``request`` made for the fallback, once the switch is said and recorded;
        None when the failure is not one to fall back on, or the fallback cannot take it (an
        alert says why)."""
        cause = fallback_cause(error)
        if cause is None or cause not in self.config.fallback_on:
            return None
        adapted, why = await self.adapt(request, specs)
        if adapted is not None and self.window is not None:
            estimate = context.estimate(adapted.system, adapted.tools, adapted.messages)
            if estimate > self.window:
                adapted, why = (
                    None,
                    (
                        f"the request (about {estimate:,} tokens) does not fit its "
                        f"{self.window:,}-token window"
                    ),
                )
        if adapted is None:
            alert("warn", "provider", f"not falling back to {self.model}: {why}")
            return None
        from_model = request.model
        changed = f" ({'; '.join(self.changes)})" if self.changes else ""
        alert(
            "warn",
            "provider",
            f"{from_model} failed ({cause}: {error}); the same request goes to the fallback "
            f"model {self.model}{changed}, and the rest of this turn stays on it",
        )
        self.keep(
            FallbackRecord(
                turn=turn,
                model=self.model,
                from_model=from_model,
                cause=cause,
                error=str(error)[:500],
                at_ms=int(time.time() * 1000),
            )
        )
        self.engaged_turn = turn
        return adapted

    async def adapt(
        self, request: ProviderRequest, specs: list[dict[str, Any]]
    ) -> tuple[ProviderRequest | None, str]:
        """``request`` as the fallback takes it (``specs``: the pod's client tools), or None
        and why not (its history would not be valid for it)."""
        await self._learn()
        assert self.thinking is not None and self.web is not None
        messages = request.messages if self.thinks else without_older_thinking(request.messages)
        violations = validate_wire(messages, thinking=self.thinking.on)
        if violations:
            return None, "the history is not valid for it: " + "; ".join(map(str, violations[:3]))
        adapted = dataclasses.replace(
            request,
            model=self.model,
            messages=messages,
            tools=[*self.web.client_tools(specs), *self.web.server_tools],
            thinking=self.thinking.thinking,
            output_config=self.thinking.output_config,
        )
        return adapted, ""

    async def _learn(self) -> None:
        """Ask the fallback's capabilities once (a lookup that fails leaves them unknown)."""
        if self.thinking is not None:
            return
        thinking: ModelThinking | None = None
        web: ModelWeb | None = None
        try:
            thinking = await self.provider.thinking_capabilities()
            web = await self.provider.web_capabilities()
            self.window = await self.provider.context_window()
        except ProviderError as exc:
            self.changes.append(f"its capabilities are unknown: {exc}")
        self.thinking = self._thinking_plan(thinking)
        self.thinks = thinking is None or thinking.adaptive or thinking.enabled
        self.web = self.config.web_plan(web)

    def _thinking_plan(self, model: ModelThinking | None) -> ThinkingPlan:
        """The pod's thinking settings where the fallback takes them, else ``auto``'s choice
        for it (an effort or display it lacks left out); each change noted."""
        config = self.config
        try:
            return config.thinking_plan(model)
        except ThinkingRefused as exc:
            self.changes.append(str(exc))
        assert model is not None  # unknown capabilities refuse nothing
        effort = config.effort if config.effort in model.efforts else None
        display = config.thinking_display if model.adaptive else None
        plan = plan_thinking(
            "auto", effort=effort, display=display, max_tokens=config.max_tokens, model=model
        )
        self.changes.append(f"it thinks {plan.summary}")
        return plan


def usage_by_model(items: Iterable[Item]) -> dict[str, TokenUsage]:
    """What the messages another model answered (a fallback) used, by model; the rest of a
    session's usage is its own model's."""
    out: dict[str, TokenUsage] = {}
    for item in items:
        if isinstance(item, AssistantMessage) and item.model and item.usage is not None:
            out[item.model] = out.get(item.model, TokenUsage()) + item.usage
    return out
