"""Changing the model, the thinking setting and the effort of a running pod (``set_model``),
and the models it can change to (``list_models``).

A change applies to the requests to come. With no turn open (the pod idle) it applies at
once; while a turn is open (running, paused, compacting…) it waits until the next turn
starts, because a turn's requests must keep the settings they began with: a tool loop that
started without thinking cannot go on with it (the API wants the loop's last assistant
message to open with its thinking), and a thinking block signed by one model is only sent
back to that model within its turn. What waits is shown in ``status.pending``.

Once applied, the pod forgets what it learned of the old model (its window, the thinking
and web plans), so the next turn asks the provider about the new one, as at start-up: a
model that cannot take the thinking setting fails that turn with the reason, and ``set_model``
can fix it. The change lives in the pod's config for as long as the pod runs (an unloaded and
reloaded pod keeps it); a restart from the command line starts with the configured model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from orchestrator.adapters.providers.base import ProviderError
from orchestrator.core.model_change import ModelChange
from orchestrator.protocol import ModelChoiceData, ModelsData, SetModelParams

if TYPE_CHECKING:
    from orchestrator.runtime.controller.state import ControllerState

__all__ = [
    "ModelChange",
    "apply_pending",
    "change_refusal",
    "list_models",
    "models_data",
    "pending",
    "set_model",
]


async def list_models(state: ControllerState) -> tuple[list[tuple[str, str]], str]:
    """The provider's models as (id, name), the current one first when it is not listed,
    and why the list is only that one (empty when the provider listed them)."""
    current = state.provider.model
    lister = getattr(state.provider, "list_models", None)
    reason = ""
    found: list[tuple[str, str]] = []
    if lister is None:
        reason = f"the {state.provider.name} provider cannot list its models"
    else:
        try:
            found = list(await lister())
        except ProviderError as exc:
            reason = str(exc)
    if current not in {model for model, _ in found}:
        found.insert(0, (current, ""))
    return found, reason


def models_data(
    state: ControllerState, found: list[tuple[str, str]], reason: str, request_id: Any
) -> ModelsData:
    """The ``models`` reply."""
    return ModelsData(
        models=[ModelChoiceData(id=model, name=name) for model, name in found],
        current=state.provider.model,
        thinking_setting=str(state.config.thinking),
        effort=state.config.effort or "",
        reason=reason,
        id=request_id,
    )


def change_refusal(
    state: ControllerState, params: SetModelParams, listed: list[tuple[str, str]] | None
) -> str | None:
    """Why this change cannot be made (None: it can); ``listed`` is the provider's models,
    None when it could not list them (any well-formed id is taken then: the next request
    says whether the model exists)."""
    if params.model is not None and listed is not None:
        known = {model for model, _ in listed}
        if params.model not in known:
            return (
                f"{params.model!r} is not a model the provider lists "
                f"({', '.join(sorted(known)) or 'none'})"
            )
    config = state.config
    thinking = params.thinking if params.thinking is not None else config.thinking
    if isinstance(thinking, int) and thinking >= config.max_tokens:
        return f"thinking = {thinking} (a budget) must be below max_tokens ({config.max_tokens})"
    if thinking == "off" and config.thinking_display is not None:
        return "thinking_display is set in the config, which needs thinking on"
    return None


def set_model(state: ControllerState, params: SetModelParams, *, idle: bool) -> bool:
    """Make the change now when no turn is open, else keep it for the next turn; True when
    it was applied now (``idle``: the machine is at rest, so no request is in flight)."""
    change = ModelChange(model=params.model, thinking=params.thinking, effort=params.effort)
    waiting = state.pending_model
    state.pending_model = change if waiting is None else waiting.merged(change)
    if idle and not state.turn_is_open:
        apply_pending(state)
        return True
    return False


def pending(state: ControllerState) -> dict[str, str]:
    """What waits for the next turn, for ``status.pending``."""
    waiting = state.pending_model
    return waiting.described() if waiting is not None else {}


def apply_pending(state: ControllerState) -> None:
    """Apply a waiting change (a turn starts, or no turn is open): the provider's model and
    the config's settings, and forget what was learned of the old model."""
    change = state.pending_model
    if change is None:
        return
    state.pending_model = None
    config = state.config
    if change.model is not None and change.model != state.provider.model:
        state.provider.model = change.model
        config.model = change.model
        state.context.forget_window()
    if change.thinking is not None:
        config.thinking = change.thinking  # type: ignore[assignment]
    if change.effort is not None:
        config.effort = None if change.effort == "default" else change.effort  # type: ignore[assignment]
    # Decided again from the (new) model's capabilities before the next request.
    state.thinking = None
    state.thinking_refused = None
    state.web = None
    state.validator.thinking = False
    state.board.mode_changed()
