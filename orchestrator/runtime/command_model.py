"""A custom command's ``model``: the turn it starts runs on that model, and the pod's own model
is back for the next turn (docs/commands.md).

The model is decided once, as the turn starts (:func:`decide_model`): a family (``opus``,
``sonnet``, ``haiku``) is the provider's newest of it, as for agent files; the provider must
list the model (when it can list its models); and while a budget is set the model must have a
price, as the config asks of ``fallback_model``, or its requests would count $0 against the
caps. A model refused is said in one alert naming the file, and the turn runs on the pod's
model. What was decided is kept with the held prompt and then on the turn's user message
(``UserMessage.model``), never in the pod's config: a pause, a crash or an unload in the
middle of the turn finds the turn's model there, and the next turn, whose message has none,
is the pod's.

The turn's requests go to the command's model through :class:`CommandModel`, which makes each
request valid for it as the fallback model does (thinking, effort and web tools it takes,
older thinking left out for a model that does not think), and names it on the messages it
answers, so their tokens count at its own prices; the budget's check before each request
prices the request's input at the turn's model too (``ControllerState.turn_model``).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from orchestrator.adapters.providers.base import (
    Provider,
    ProviderError,
    ProviderRequest,
    SwitchesModel,
)
from orchestrator.capabilities.subpods.agent_files import ModelFamilies
from orchestrator.core.command_text import clean_line
from orchestrator.core.history import UserMessage
from orchestrator.runtime import model_choice
from orchestrator.runtime.controller import budget
from orchestrator.runtime.controller.prompt import held_record
from orchestrator.runtime.fallback import Fallback

if TYPE_CHECKING:
    from orchestrator.runtime.context import Context
    from orchestrator.runtime.controller.state import ControllerState

__all__ = ["CommandModel", "decide_model", "turn_model", "use_turn_model"]

T = TypeVar("T")

_MODEL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@/-]{0,199}")
"""What a model name may be: an id (``claude-opus-4-5``), a platform's (Bedrock's
``anthropic.claude-…-v1:0``, an inference profile's ARN, Vertex's ``claude-…@date``), a
family. Anything else (control characters, a page of text) is refused before it is sent or
shown."""


@dataclasses.dataclass(kw_only=True, eq=False)
class CommandModel(Fallback):
    """The model a custom command's turn runs on: every request of the turn goes to it, made
    valid for what it accepts (the fallback's adaptation); a request its rules cannot make
    valid goes to the pod's own model, said once."""

    said: bool = False

    async def ask(
        self,
        request: ProviderRequest,
        stream: Callable[[Provider, ProviderRequest], Awaitable[T]],
        *,
        primary: Provider,
        turn: int,
        specs: list[dict[str, Any]],
        context: Context,
        alert: Callable[[str, str, str], None],
    ) -> T:
        """``stream`` the request on the command's model (the pod's, when it cannot take it)."""
        adapted, why = await self.adapt(request, specs)
        if adapted is not None:
            return await stream(self.provider, adapted)
        if not self.said:
            self.said = True
            alert("warn", "commands", f"{self.model} cannot take this request ({why}); the "
                                      f"pod's model {primary.model} answers it")  # fmt: skip
        return await stream(primary, request)


async def decide_model(state: ControllerState) -> None:
    """Decide the held command's model, once: the id its turn runs on, or None for the pod's
    own (one alert says which, and why a model asked for is not used)."""
    submission = state.opening.prompt
    command = submission.command if submission is not None else None
    if submission is None or command is None or command.model is None or command.decided:
        return
    where = f"/{command.name} ({command.path})" if command.path else f"/{command.name}"
    own, asked = state.provider.model, clean_line(command.model, limit=80)
    chosen, refusal = await _choose(state, command.model)
    if refusal:
        state.alert(
            "warn",
            "commands",
            f"{where} asks for model {asked!r}, which is not used: {refusal}; this turn "
            f"runs on the pod's model {own}",
        )
    elif chosen is not None:
        state.alert(
            "info",
            "commands",
            f"{where} runs this turn on {chosen} (its model: {asked}); the pod's model {own} "
            "answers the next",
        )
    decided = command.model_copy(update={"model": chosen, "decided": True})
    state.opening.prompt = dataclasses.replace(submission, command=decided)
    state.transcript.record(held_record(state.opening.prompt, state.history.turn))


async def _choose(state: ControllerState, asked: str) -> tuple[str | None, str]:
    """(the model id, "") for a model the turn may run on; (None, "") when it is the pod's
    own; (None, why) when it may not."""
    provider = state.provider
    if not _MODEL_NAME.fullmatch(asked.strip()):
        return None, "that is not a model name"
    if not isinstance(provider, SwitchesModel):
        return None, f"the {provider.name} provider answers as one model"
    lister = getattr(provider, "listed_models", None)
    try:
        model = await ModelFamilies(lister).resolve(asked)
    except ProviderError as exc:  # the family table, as for agent files
        return None, f"it could not be resolved: {exc}"
    if model == provider.model:
        return None, ""
    listed, reason = await model_choice.list_models(state)
    if not reason and model not in {known for known, _ in listed}:
        return None, f"the provider does not list {model}"
    if budget.caps_of(state).any and state.config.model_prices(model) is None:
        return None, (
            f"a budget is set and {model} has no price, so its requests could not count: set "
            f'[prices."{model}"] input and output in your own config'
        )
    return model, ""


def turn_model(state: ControllerState) -> str | None:
    """The model the open turn runs on when it is not the pod's own: its user message's."""
    turn = state.history.turn
    for item in reversed(state.history.items):
        if item.turn < turn:
            break
        if isinstance(item, UserMessage) and item.turn == turn:
            return item.model
    return None


def use_turn_model(state: ControllerState) -> CommandModel | None:
    """What the open turn's requests go through when it runs on a command's model (None: the
    pod's own, with its fallback); ``state.turn_model`` says it for the budget's checks."""
    model = turn_model(state)
    provider = state.provider
    if model is None or model == provider.model or not isinstance(provider, SwitchesModel):
        state.turn_model = None
        return None
    state.turn_model = model
    return CommandModel(
        provider=provider.with_model(model), config=state.config, keep=lambda record: None
    )
