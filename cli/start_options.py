"""The options of every command that starts a pod, declared once.

``pod serve`` and ``pod fleet add`` start the pod they name: their help says what each option
sets. ``pod chat``, ``pod run`` and ``pod acp`` start one only when none runs, so theirs say
"when a pod is started" (a running pod keeps its settings). Both wordings are built here from
the same texts, and both sets land in one value, :class:`PodSettings` (or :class:`StartOptions`,
which adds how the session is chosen), that turns into config overrides or ``pod serve``
arguments.

A command takes a set with :func:`options_into`: its ``settings`` (or ``start``) parameter is
replaced, in help and on the command line, by the options, and receives their value.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

__all__ = [
    "SETTINGS",
    "WHEN_STARTED",
    "AllowBashOpt",
    "BudgetUsdOpt",
    "EffortOpt",
    "MaxRoundsOpt",
    "ModelOpt",
    "NewOpt",
    "NoHostOpt",
    "PermissionModeOpt",
    "PodSettings",
    "ProviderOpt",
    "SandboxOpt",
    "SessionOpt",
    "StartAllowBashOpt",
    "StartEffortOpt",
    "StartModelOpt",
    "StartOptions",
    "StartPermissionModeOpt",
    "StartProviderOpt",
    "StartThinkingOpt",
    "StartWebOpt",
    "ThinkingOpt",
    "TurnBudgetUsdOpt",
    "WebOpt",
    "budget_value",
    "options_into",
    "permissions_overrides",
    "start_overrides",
    "thinking_value",
    "web_value",
]


def thinking_value(value: str | None) -> str | None:
    """``--thinking``: auto, adaptive, off, or a budget of at least 1024 tokens; anything else
    is a usage error that says so in one line (the config's check named pydantic's union
    members: ``thinking.literal['auto','adaptive','off']``)."""
    if value is None or value in ("auto", "adaptive", "off"):
        return value
    from orchestrator.core.thinking import MIN_BUDGET

    if value.isdigit() and int(value) >= MIN_BUDGET:
        return value
    raise typer.BadParameter(
        f"{value!r} is not auto, adaptive, off or a budget of at least {MIN_BUDGET} thinking tokens"
    )


def web_value(value: str | None) -> str | None:
    """``--web``: on or off; anything else is a one-line usage error."""
    if value is None or value in ("on", "off"):
        return value
    raise typer.BadParameter(f"{value!r} is not on or off")


def budget_value(value: float | None) -> float | None:
    """``--budget-usd`` / ``--turn-budget-usd``: dollars, 0 or more; anything else is a one-line
    usage error (an infinity or NaN would be no budget at all)."""
    if value is None or (value >= 0 and value != float("inf")):
        return value
    raise typer.BadParameter(f"{value!r} is not an amount of dollars (0 or more)")


def rounds_value(value: int | None) -> int | None:
    """``--max-rounds``: a positive count of model requests."""
    if value is None or value > 0:
        return value
    raise typer.BadParameter(f"{value!r} is not a positive number of rounds")


_BUDGET = "dollars the session may spend; reaching it pauses the turn (docs/budgets.md)"
_TURN_BUDGET = "dollars one turn may spend; reaching it pauses the turn (docs/budgets.md)"
_ROUNDS = "model requests a turn may make before it ends with limit_reached"
# The budget options of every command that starts a pod: given to a running pod they do
# nothing (``pod budget set`` changes a running pod's), as the other start options.
BudgetUsdOpt = Annotated[
    float | None, typer.Option(help=f"When a pod is started: {_BUDGET}.", callback=budget_value)
]
TurnBudgetUsdOpt = Annotated[
    float | None,
    typer.Option(help=f"When a pod is started: {_TURN_BUDGET}.", callback=budget_value),
]
MaxRoundsOpt = Annotated[
    int | None, typer.Option(help=f"When a pod is started: {_ROUNDS}.", callback=rounds_value)
]

_WEB = "on (web search on; fetch as configured) or off (no web search or fetch)"
_PERMISSION_MODES = (
    "default (ask before edits and commands), accept-edits, plan (plan first: nothing "
    "changes until you approve the plan), yolo or read-only."
)
_THINKING = "auto, adaptive, off, or a budget of thinking tokens"
_EFFORTS = "low, medium, high, xhigh or max."
_WHEN = "When a pod is started: "

# The options of a command that starts the pod it names (``pod serve``, ``pod fleet add``).
ProviderOpt = Annotated[
    str | None,
    typer.Option(
        help="anthropic, bedrock, vertex or scripted (default: anthropic if a key is set)."
    ),
]
ModelOpt = Annotated[str | None, typer.Option(help="Model name for the anthropic provider.")]
_FALLBACK = "A second model for a request that keeps failing (overloaded, 5xx, model not found)"
FallbackModelOpt = Annotated[str | None, typer.Option(help=f"{_FALLBACK}.")]
AllowBashOpt = Annotated[
    bool | None,
    typer.Option(
        "--allow-bash/--no-allow-bash",
        help="Enable (or force off) the bash tool, whatever the config files say.",
    ),
]
PermissionModeOpt = Annotated[str | None, typer.Option(help=_PERMISSION_MODES)]
ThinkingOpt = Annotated[
    str | None, typer.Option(help=f"{_THINKING} (≥ 1024).", callback=thinking_value)
]
EffortOpt = Annotated[str | None, typer.Option(help=_EFFORTS)]
WebOpt = Annotated[str | None, typer.Option(help=f"{_WEB}.", callback=web_value)]
SandboxOpt = Annotated[
    str | None,
    typer.Option(help="Where bash runs: auto (sandboxed where bubblewrap works), on, off."),
]
NoHostOpt = Annotated[
    bool,
    typer.Option(
        "--no-host",
        help="When a pod is started: as a process of its own, not in the pod host (docs/host.md).",
    ),
]


def _when_started(help: str, *decls: str, **extra: Any) -> Any:
    return typer.Option(*decls, help=help, show_default=False, **extra)


# The options of a command that starts a pod only when none runs (``pod chat``, ``pod run``,
# ``pod acp``): a running pod keeps its settings.
NewOpt = Annotated[
    bool, typer.Option("--new", help="Start a new session instead of continuing the latest one.")
]
SessionOpt = Annotated[
    str | None, _when_started("Continue this session: a name from `pod sessions ls`, or a path.")
]
StartModelOpt = Annotated[
    str | None, _when_started("Model name, when a pod is started (default: the config's).")
]
StartFallbackModelOpt = Annotated[str | None, _when_started(f"{_WHEN}{_FALLBACK.lower()}.")]
StartProviderOpt = Annotated[
    str | None,
    _when_started(
        "anthropic, bedrock, vertex or scripted, when a pod is started (default: anthropic "
        "if a key is set)."
    ),
]
StartAllowBashOpt = Annotated[
    bool | None,
    _when_started(f"{_WHEN}enable (or force off) its bash tool.", "--allow-bash/--no-allow-bash"),
]
StartPermissionModeOpt = Annotated[str | None, _when_started(_WHEN + _PERMISSION_MODES)]
StartThinkingOpt = Annotated[
    str | None, _when_started(f"{_WHEN}{_THINKING}.", callback=thinking_value)
]
StartEffortOpt = Annotated[str | None, _when_started(_WHEN + _EFFORTS)]
StartWebOpt = Annotated[str | None, _when_started(f"{_WHEN}{_WEB}.", callback=web_value)]

WHEN_STARTED: dict[str, tuple[Any, Any]] = {
    "new": (NewOpt, False),
    "session": (SessionOpt, None),
    "model": (StartModelOpt, None),
    "fallback_model": (StartFallbackModelOpt, None),
    "provider": (StartProviderOpt, None),
    "allow_bash": (StartAllowBashOpt, None),
    "permission_mode": (StartPermissionModeOpt, None),
    "thinking": (StartThinkingOpt, None),
    "effort": (StartEffortOpt, None),
    "web": (StartWebOpt, None),
    "budget_usd": (BudgetUsdOpt, None),
    "turn_budget_usd": (TurnBudgetUsdOpt, None),
    "max_rounds": (MaxRoundsOpt, None),
    "no_host": (NoHostOpt, False),
}
"""``pod chat``'s and ``pod run``'s options that choose how a pod is started: each field of
:class:`StartOptions` but ``name``, as (annotation, default), in help order."""

SETTINGS: dict[str, tuple[Any, Any]] = {
    "provider": (ProviderOpt, None),
    "model": (ModelOpt, None),
    "fallback_model": (FallbackModelOpt, None),
    "allow_bash": (AllowBashOpt, None),
    "permission_mode": (PermissionModeOpt, None),
    "thinking": (ThinkingOpt, None),
    "effort": (EffortOpt, None),
    "web": (WebOpt, None),
    "sandbox": (SandboxOpt, None),
    "budget_usd": (BudgetUsdOpt, None),
    "turn_budget_usd": (TurnBudgetUsdOpt, None),
    "max_rounds": (MaxRoundsOpt, None),
}
"""``pod fleet add``'s settings of the pod it starts: :class:`PodSettings`, in help order."""


@dataclass(frozen=True, kw_only=True)
class PodSettings:
    """What a starting pod takes from the command line over its config files."""

    provider: str | None = None
    model: str | None = None
    allow_bash: bool | None = None
    permission_mode: str | None = None
    thinking: str | None = None
    effort: str | None = None
    web: str | None = None
    """``--web on|off`` (:func:`~orchestrator.config.web.web_overrides`)."""
    sandbox: str | None = None
    """Not taken by ``pod chat`` / ``pod run`` (a pod they start has its config's)."""
    fallback_model: str | None = None
    """``--fallback-model`` (docs/providers.md)."""
    budget_usd: float | None = None
    """``--budget-usd``: the session's budget in dollars."""
    turn_budget_usd: float | None = None
    """``--turn-budget-usd``: one turn's budget in dollars."""
    max_rounds: int | None = None
    """``--max-rounds``: model requests a turn may make."""

    def settings_given(self) -> list[str]:
        """The options given that only a starting pod can apply."""
        given = [
            ("--model", self.model),
            ("--provider", self.provider),
            ("--permission-mode", self.permission_mode),
            ("--thinking", self.thinking),
            ("--effort", self.effort),
            ("--web", self.web),
            ("--sandbox", self.sandbox),
            ("--fallback-model", self.fallback_model),
            ("--budget-usd", self.budget_usd),
            ("--turn-budget-usd", self.turn_budget_usd),
            ("--max-rounds", self.max_rounds),
        ]
        names = [name for name, value in given if value is not None]
        if self.allow_bash is not None:
            names.append("--allow-bash" if self.allow_bash else "--no-allow-bash")
        return names

    def overrides(self) -> dict[str, Any]:
        """These settings as ``load_config`` overrides."""
        return start_overrides(**{f.name: getattr(self, f.name) for f in fields(PodSettings)})

    def settings_args(self) -> list[str]:
        """These settings as ``pod serve`` options."""
        args: list[str] = []
        if self.model is not None:
            args += ["--model", self.model]
        if self.provider is not None:
            args += ["--provider", self.provider]
        if self.allow_bash is not None:
            args.append("--allow-bash" if self.allow_bash else "--no-allow-bash")
        if self.permission_mode is not None:
            args += ["--permission-mode", self.permission_mode]
        if self.thinking is not None:
            args += ["--thinking", self.thinking]
        if self.effort is not None:
            args += ["--effort", self.effort]
        if self.web is not None:
            args += ["--web", self.web]
        if self.sandbox is not None:
            args += ["--sandbox", self.sandbox]
        if self.fallback_model is not None:
            args += ["--fallback-model", self.fallback_model]
        for flag, value in (
            ("--budget-usd", self.budget_usd),
            ("--turn-budget-usd", self.turn_budget_usd),
            ("--max-rounds", self.max_rounds),
        ):
            if value is not None:
                args += [flag, str(value)]
        return args


@dataclass(frozen=True, kw_only=True)
class StartOptions(PodSettings):
    """How ``pod chat``, ``pod run`` and ``pod acp`` start a pod when the workspace has none
    running."""

    new: bool = False
    """Start a new session instead of continuing the latest one that has content."""
    session: str | None = None
    """A session name from ``pod sessions ls``, or a path."""
    no_host: bool = False
    """Start a ``pod serve`` process for the pod even where a host would serve it."""
    name: str | None = None
    """The pod's name: the pod of that name is the one used (or started), beside any other
    pod of the workspace (a fork continued while the original's pod runs)."""

    def choices_given(self) -> list[str]:
        """The options given that choose a starting pod's settings or its conversation."""
        chosen = self.settings_given() + (["--new"] if self.new else [])
        return chosen + (["--session"] if self.session else [])

    def serve_args(self, session: Path | None) -> list[str]:
        """``pod serve`` options for a pod started with these options (``session`` resolved)."""
        args: list[str] = []
        if session is not None:
            args += ["--session", str(session.resolve())]
        elif not self.new:
            args.append("--continue")
        return args + self.settings_args()


def start_overrides(
    *,
    provider: str | None,
    model: str | None,
    allow_bash: bool | None,
    permission_mode: str | None,
    thinking: str | None,
    effort: str | None,
    web: str | None = None,
    sandbox: str | None = None,
    fallback_model: str | None = None,
    budget_usd: float | None = None,
    turn_budget_usd: float | None = None,
    max_rounds: int | None = None,
) -> dict[str, Any]:
    """The config overrides of the options every command that starts a pod takes (``pod
    serve`` and ``pod fleet add``, and ``pod chat`` / ``pod run`` loading a pod into the
    host, which take no ``--sandbox``)."""
    from orchestrator.config.web import web_overrides

    return {
        "sandbox": {"mode": sandbox} if sandbox else None,
        "provider": provider,
        "model": model,
        "allow_bash": allow_bash,
        "permissions": permissions_overrides(permission_mode, allow_bash),
        "thinking": int(thinking) if thinking and thinking.isdigit() else thinking,
        "effort": effort,
        "web": web_overrides(web),
        "fallback_model": fallback_model,
        "budget_usd": budget_usd,
        "turn_budget_usd": turn_budget_usd,
        "max_rounds": max_rounds,
    }


def permissions_overrides(mode: str | None, allow_bash: bool | None) -> dict[str, Any] | None:
    """The ``[permissions]`` the command line sets: a mode, and ``--no-allow-bash`` as a deny."""
    table: dict[str, Any] = {}
    if mode:
        table["mode"] = mode
    if allow_bash is False:
        table["deny"] = ["bash"]  # forced off: not offered, whatever a config allows
    return table or None


R = TypeVar("R")


def options_into(
    parameter: str, build: Callable[..., Any], options: dict[str, tuple[Any, Any]]
) -> Callable[[Callable[..., R]], Callable[..., R]]:
    """Give a typer command ``options`` in place of its ``parameter``, which receives
    ``build(**their values)``: one declaration of the options for every command taking them
    (``@options_into("start", StartOptions, WHEN_STARTED)``). Help lists them where
    ``parameter`` stands."""

    def decorate(command: Callable[..., R]) -> Callable[..., R]:
        signature = inspect.signature(command, eval_str=True)
        params: list[inspect.Parameter] = []
        for param in signature.parameters.values():
            if param.name != parameter:
                params.append(param)
                continue
            params += [
                inspect.Parameter(
                    name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default, annotation=kind
                )
                for name, (kind, default) in options.items()
            ]

        @functools.wraps(command)
        def with_options(*args: Any, **kwargs: Any) -> R:
            values = {name: kwargs.pop(name) for name in options}
            return command(*args, **{parameter: build(**values)}, **kwargs)

        with_options.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
        return with_options

    return decorate
