"""The pod's model, thinking and effort as ACP session config options.

Every session offers three select options: ``model`` (category ``model``: the models the
pod's provider lists, ``list_models``), ``thinking`` and ``effort`` (category
``thought_level``: the config keys of those names, docs/thinking.md). Choosing one in the
editor (``session/set_config_option``) is the pod's ``set_model``; whatever changes them
elsewhere (another client, ``pod attach``, a change that waited for the turn to end) reaches
the editor as a ``config_option_update``, since each ``status`` is compared with what the
editor was last told. A change made while a turn runs applies when the next one starts: the
options show the value chosen (``status.pending``), the one the next turn will use.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from acp import schema

from cli.errors import CliError

__all__ = [
    "EFFORTS",
    "THINKING",
    "OptionRefused",
    "Settings",
    "config_options",
    "option_update",
    "set_model_params",
    "settings_of",
]

THINKING: tuple[tuple[str, str, str], ...] = (
    ("auto", "Auto", "Adaptive where the model takes it, else a budget, else none."),
    ("adaptive", "Adaptive", "The model decides how much to think."),
    ("off", "Off", "No extended thinking."),
)
"""(value, name, description) of the thinking settings offered (a budget set elsewhere is
offered too, as its number)."""

EFFORTS: tuple[tuple[str, str], ...] = (
    ("default", "Model default"),
    ("low", "Low"),
    ("medium", "Medium"),
    ("high", "High"),
    ("xhigh", "Extra high"),
    ("max", "Max"),
)
"""(value, name) of the efforts offered; ``default`` is the model's own."""


class OptionRefused(CliError):
    """A config option or value this agent does not offer; the message says which."""


@dataclass(frozen=True)
class Settings:
    """What the editor is shown: the model and the two thought levels, as the next turn
    uses them."""

    model: str
    thinking: str
    effort: str
    """``default`` for the model's own."""


def settings_of(data: dict[str, Any]) -> Settings | None:
    """The settings a ``status`` (or ``models``) event's data says, a pending change taking
    the place of what it changes; None when it does not say them (an older pod)."""
    model = data.get("model") or data.get("current")
    if not model or "thinking_setting" not in data:
        return None
    pending = data.get("pending") or {}
    return Settings(
        model=str(pending.get("model", model)),
        thinking=str(pending.get("thinking", data["thinking_setting"])),
        effort=str(pending.get("effort", data.get("effort") or "default")),
    )


def config_options(
    settings: Settings, models: list[tuple[str, str]]
) -> list[schema.SessionConfigOptionSelect | schema.SessionConfigOptionBoolean]:
    """The three options with their current values."""
    listed = list(models)
    if settings.model not in {model for model, _ in listed}:
        listed.insert(0, (settings.model, ""))
    thinking = list(THINKING)
    if settings.thinking not in {value for value, _, _ in thinking}:
        budget = settings.thinking
        thinking.append((budget, f"Budget {budget}", f"Up to {budget} thinking tokens."))
    return [
        schema.SessionConfigOptionSelect(
            type="select",
            id="model",
            name="Model",
            category="model",
            current_value=settings.model,
            options=[
                schema.SessionConfigSelectOption(value=model, name=name or model)
                for model, name in listed
            ],
        ),
        schema.SessionConfigOptionSelect(
            type="select",
            id="thinking",
            name="Thinking",
            category="thought_level",
            current_value=settings.thinking,
            options=[
                schema.SessionConfigSelectOption(value=value, name=name, description=why)
                for value, name, why in thinking
            ],
        ),
        schema.SessionConfigOptionSelect(
            type="select",
            id="effort",
            name="Effort",
            category="thought_level",
            current_value=settings.effort,
            options=[schema.SessionConfigSelectOption(value=v, name=n) for v, n in EFFORTS],
        ),
    ]


def option_update(settings: Settings, models: list[tuple[str, str]]) -> schema.ConfigOptionUpdate:
    """The ``config_option_update`` telling the editor the options changed."""
    return schema.ConfigOptionUpdate(
        session_update="config_option_update", config_options=config_options(settings, models)
    )


def set_model_params(config_id: str, value: str | bool) -> dict[str, Any]:
    """The pod's ``set_model`` params for the editor's choice; :class:`OptionRefused` for
    an option or value not offered (a model is checked by the pod, against its provider)."""
    if not isinstance(value, str):
        raise OptionRefused(f"the option {config_id!r} takes a value from its list, not {value!r}")
    if config_id == "model":
        return {"model": value}
    if config_id == "thinking":
        if value.isdigit():
            return {"thinking": int(value)}
        if value not in {v for v, _, _ in THINKING}:
            raise OptionRefused(f"thinking takes auto, adaptive, off or a budget, not {value!r}")
        return {"thinking": value}
    if config_id == "effort":
        if value not in {v for v, _ in EFFORTS}:
            offered = ", ".join(v for v, _ in EFFORTS)
            raise OptionRefused(f"effort takes {offered}, not {value!r}")
        return {"effort": value}
    raise OptionRefused(f"no config option {config_id!r} (there are model, thinking and effort)")
