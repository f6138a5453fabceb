"""Interceptors: the points where the pod (or an embedding program) may steer a turn, and
what each may answer. Pure: the verdicts, the events, the in-process protocols.

There is one list of such points, :class:`HookEvent`, and two forms of answering them, asked
in this order by the :class:`~orchestrator.capabilities.hooks.chain.InterceptorChain`:

1. **in process**: an embedding program's objects, whose methods are named after the events
   they answer. Interceptors can change what happens; read-only hooks (:class:`PromptHook`)
   can only watch, and their narrower result type keeps them that way.

   - ``on_prompt_submit`` (``UserPromptSubmit``): Continue, Cancel(reason), or
     ContinueWith(items), the items landing right after the user message (this is how
     resolved ``@file`` refs arrive);
   - ``before_tool`` (``PreToolUse``): Continue, Deny(reason) (the call gets an error
     result), or Pause;
   - ``on_turn_end`` (``Stop``): Finish, ContinueWithMessages(items) (another round), or
     Pause.

2. **commands** (``[hooks]`` in the user's config, :mod:`orchestrator.capabilities.hooks`), with Claude
   Code's contract, for every event; they are asked only when the in-process answer lets
   things go on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeAlias

from orchestrator.core.history import Item, SystemMessage, ToolUseBlock, UserMessage
from orchestrator.core.hook_events import HookEvent

__all__ = [
    "INTERCEPTOR_EVENTS",
    "AfterTool",
    "BaseInterceptor",
    "Cancel",
    "Continue",
    "ContinueWith",
    "ContinueWithMessages",
    "Deny",
    "Finish",
    "HookAction",
    "HookEvent",
    "Interceptor",
    "Pause",
    "Proceed",
    "PromptAction",
    "PromptHook",
    "ToolAction",
    "TurnEndAction",
    "hook_note",
]


@dataclass(frozen=True, slots=True)
class Continue:
    """Go on as normal."""


@dataclass(frozen=True, slots=True)
class Cancel:
    """Drop the submit; nothing is committed and the reason is shown as an alert."""

    reason: str


@dataclass(frozen=True, slots=True)
class ContinueWith:
    """Go on, committing these items right after the user message."""

    items: Sequence[Item] = field(default_factory=tuple)


@dataclass(frozen=True, slots=True)
class Deny:
    """Do not run this tool call; the model gets an error result with the reason."""

    reason: str


@dataclass(frozen=True, slots=True)
class Pause:
    """Stop the turn here and go to ``paused``; resume continues from this point."""

    reason: str = ""


@dataclass(frozen=True, slots=True)
class Proceed:
    """Run this call, as a ``PreToolUse`` hook said: ``permission`` ``allow`` skips asking a
    person (rules that deny still deny), ``ask`` asks even where the rules would not;
    ``input`` replaces the model's input (the policy decides on it afresh)."""

    permission: Literal["allow", "ask"] | None = None
    input: Mapping[str, Any] | None = None
    reason: str = ""


@dataclass(frozen=True, slots=True)
class AfterTool:
    """What ``PostToolUse`` hooks said about a result: notes the model reads with it, and
    whether the turn stops once the round's results are in."""

    notes: tuple[str, ...] = ()
    stop: str | None = None


@dataclass(frozen=True, slots=True)
class Finish:
    """End the turn."""


@dataclass(frozen=True, slots=True)
class ContinueWithMessages:
    """Commit these items and run another round instead of ending the turn."""

    items: Sequence[Item] = field(default_factory=tuple)


PromptAction: TypeAlias = Continue | Cancel | ContinueWith
ToolAction: TypeAlias = Continue | Deny | Pause | Proceed
TurnEndAction: TypeAlias = Finish | ContinueWithMessages | Pause
HookAction: TypeAlias = Continue | Cancel
"""What a read-only hook may answer: it can veto a submit but never add to history."""


INTERCEPTOR_EVENTS: dict[str, HookEvent] = {
    "on_prompt_submit": HookEvent.USER_PROMPT_SUBMIT,
    "before_tool": HookEvent.PRE_TOOL_USE,
    "on_turn_end": HookEvent.STOP,
}
"""Which event each in-process method answers (the events' one list is :class:`HookEvent`)."""


class Interceptor(Protocol):
    """An object with any of the three interception points."""

    def on_prompt_submit(self, message: UserMessage) -> PromptAction:
        """Called before a user message is committed."""
        ...

    def before_tool(self, call: ToolUseBlock) -> ToolAction:
        """Called before each tool call runs."""
        ...

    def on_turn_end(self, items: Sequence[Item]) -> TurnEndAction:
        """Called when the model ends its turn."""
        ...


class PromptHook(Protocol):
    """A read-only observer of submits (public extension surface)."""

    def __call__(self, message: UserMessage) -> HookAction:
        """Return Continue, or Cancel to veto the submit."""
        ...


class BaseInterceptor:
    """An interceptor that lets everything through; subclass and override what you need."""

    def on_prompt_submit(self, message: UserMessage) -> PromptAction:
        """Continue."""
        return Continue()

    def before_tool(self, call: ToolUseBlock) -> ToolAction:
        """Continue."""
        return Continue()

    def on_turn_end(self, items: Sequence[Item]) -> TurnEndAction:
        """Finish."""
        return Finish()


def hook_note(event: HookEvent, text: str) -> SystemMessage:
    """What a hook adds for the model, marked with the event that added it."""
    return SystemMessage(text=f"[{event} hook] {text}", origin="hook")
