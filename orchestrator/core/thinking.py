"""Extended thinking: what the requests of a pod ask for, decided from the model's capabilities.

The setting (``thinking``, ``effort``, ``thinking_display`` in the config) says what the user
wants; the Models API says what the model accepts (``capabilities.thinking.types`` and
``capabilities.effort``). :func:`plan_thinking` turns both into the request's ``thinking`` and
``output_config`` (the SDK's own param types), or refuses with one error that names the model
and what it accepts, before any request is sent: a refused setting must never be a 400 in the
middle of a turn.

``"auto"`` asks for adaptive thinking where the model takes it, else for thinking with a budget
(:data:`DEFAULT_BUDGET`, kept below ``max_tokens``), else for nothing. When the capabilities are
unknown (a compatible server without the Models API, the scripted provider without thinking),
``auto`` sends nothing and explicit settings are sent as asked.

Pure: no I/O; the provider fetches the capabilities.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from orchestrator.errors import PodRuntimeError

if TYPE_CHECKING:  # the SDK is imported only by the provider that talks to the API
    from anthropic.types import (
        ModelCapabilities,
        OutputConfigParam,
        ThinkingConfigAdaptiveParam,
        ThinkingConfigDisabledParam,
        ThinkingConfigEnabledParam,
        ThinkingConfigParam,
    )

ThinkingSetting = Literal["auto", "adaptive", "off"] | int
"""``auto``, ``adaptive``, ``off``, or a budget of thinking tokens (thinking ``enabled``)."""
Effort = Literal["low", "medium", "high", "xhigh", "max"]
Display = Literal["summarized", "omitted"]

EFFORTS: tuple[Effort, ...] = ("low", "medium", "high", "xhigh", "max")
MIN_BUDGET = 1024
"""The API's smallest ``budget_tokens``."""
DEFAULT_BUDGET = 16_000
"""``auto``'s budget on a model that takes only ``enabled`` (cut to below ``max_tokens``)."""


class ThinkingRefused(PodRuntimeError):
    """The thinking setting is one the model does not accept; says what it does accept."""


@dataclass(frozen=True, slots=True)
class ModelThinking:
    """What a model accepts, as the Models API reports it."""

    model: str
    adaptive: bool = False
    enabled: bool = False
    disabled: bool = True
    efforts: frozenset[str] = frozenset()
    """Effort levels the model takes; empty when it takes none."""

    @classmethod
    def from_capabilities(cls, model: str, caps: ModelCapabilities) -> ModelThinking:
        """From the SDK's ``ModelInfo.capabilities``."""
        types = caps.thinking.types
        effort = caps.effort
        efforts = frozenset(
            level
            for level in EFFORTS
            if effort.supported and (support := getattr(effort, level, None)) is not None
            if support.supported
        )
        return cls(
            model=model,
            adaptive=caps.thinking.supported and types.adaptive.supported,
            enabled=caps.thinking.supported and types.enabled.supported,
            disabled=types.disabled.supported,
            efforts=efforts,
        )

    def accepts(self) -> str:
        """What it accepts, in words."""
        kinds = [
            name for name, ok in (("adaptive", self.adaptive), ("a budget", self.enabled)) if ok
        ]
        thinking = " or ".join(kinds) if kinds else "no thinking"
        off = "" if self.disabled else ", and cannot turn thinking off"
        effort = f"; effort {', '.join(sorted(self.efforts))}" if self.efforts else "; no effort"
        return f"{self.model} accepts {thinking}{off}{effort}"


@dataclass(frozen=True, slots=True)
class ThinkingPlan:
    """What every request of the pod carries, and how it reads in ``pod status``."""

    thinking: ThinkingConfigParam | None = None
    output_config: OutputConfigParam | None = None
    summary: str = "off"

    @property
    def on(self) -> bool:
        """Whether responses may hold thinking (the API's rules for it apply)."""
        return self.thinking is not None and self.thinking["type"] in ("adaptive", "enabled")


def plan_thinking(
    setting: ThinkingSetting,
    *,
    effort: Effort | None,
    display: Display | None,
    max_tokens: int,
    model: ModelThinking | None,
) -> ThinkingPlan:
    """The thinking a pod's requests ask for; :class:`ThinkingRefused` when the model
    (``None``: capabilities unknown) cannot take the setting."""
    name = model.model if model is not None else "the model"
    if isinstance(setting, int) and not isinstance(setting, bool):
        plan = _budget(setting, max_tokens, model, name)
    elif setting == "adaptive":
        if model is not None and not model.adaptive:
            raise ThinkingRefused(f'thinking = "adaptive" is refused: {model.accepts()}')
        plan = _adaptive(display)
    elif setting == "off":
        if model is not None and not model.disabled:
            raise ThinkingRefused(
                f'thinking = "off" is refused: {model.accepts()}; use "auto" or "adaptive"'
            )
        disabled: ThinkingConfigDisabledParam = {"type": "disabled"}
        plan = ThinkingPlan(thinking=disabled if model is not None else None, summary="off")
    elif model is None:
        plan = ThinkingPlan(summary="off (the model's capabilities are unknown)")
    elif model.adaptive:
        plan = _adaptive(display)
    elif model.enabled and max_tokens > MIN_BUDGET:
        plan = _budget(min(DEFAULT_BUDGET, max_tokens - 1), max_tokens, model, name)
    else:
        plan = ThinkingPlan(summary=f"off ({name} does not think)")
    if effort is not None:
        if model is not None and effort not in model.efforts:
            raise ThinkingRefused(f'effort = "{effort}" is refused: {model.accepts()}')
        config: OutputConfigParam = {"effort": effort}
        plan = ThinkingPlan(plan.thinking, config, f"{plan.summary}, effort {effort}")
    if display is not None and (plan.thinking is None or plan.thinking["type"] != "adaptive"):
        raise ThinkingRefused(
            f'thinking_display = "{display}" needs adaptive thinking; this pod sends {plan.summary}'
        )
    return plan


def _adaptive(display: Display | None) -> ThinkingPlan:
    adaptive: ThinkingConfigAdaptiveParam = {"type": "adaptive"}
    if display is not None:
        adaptive["display"] = display
    return ThinkingPlan(
        thinking=adaptive, summary="adaptive" + (f" ({display})" if display else "")
    )


def _budget(budget: int, max_tokens: int, model: ModelThinking | None, name: str) -> ThinkingPlan:
    if model is not None and not model.enabled:
        raise ThinkingRefused(f"thinking = {budget} (a budget) is refused: {model.accepts()}")
    if budget < MIN_BUDGET:
        raise ThinkingRefused(f"thinking = {budget} is refused: a budget is at least {MIN_BUDGET}")
    if budget >= max_tokens:
        raise ThinkingRefused(
            f"thinking = {budget} is refused: a budget must be below max_tokens ({max_tokens}) "
            f"for {name}; lower it or raise max_tokens"
        )
    enabled: ThinkingConfigEnabledParam = {"type": "enabled", "budget_tokens": budget}
    return ThinkingPlan(thinking=enabled, summary=f"budget {budget}")
