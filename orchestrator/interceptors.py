"""Interceptors: the points where the pod (or an embedding program) may steer a turn.

Interceptors can change what happens; hooks (:class:`PromptHook`) can only watch, and their
narrower result type keeps them that way.

- ``on_prompt_submit``: Continue, Cancel(reason), or ContinueWith(items) — the items land right
  after the user message (this is how resolved ``@file`` refs arrive).
- ``before_tool``: Continue, Deny(reason) (the call gets an error result), or Pause.
- ``on_turn_end``: Finish, ContinueWithMessages(items) (another round), or Pause.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeAlias

from orchestrator.history import Item, ToolUseBlock, UserMessage


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
class Finish:
    """End the turn."""


@dataclass(frozen=True, slots=True)
class ContinueWithMessages:
    """Commit these items and run another round instead of ending the turn."""

    items: Sequence[Item] = field(default_factory=tuple)


PromptAction: TypeAlias = Continue | Cancel | ContinueWith
ToolAction: TypeAlias = Continue | Deny | Pause
TurnEndAction: TypeAlias = Finish | ContinueWithMessages | Pause
HookAction: TypeAlias = Continue | Cancel
"""What a read-only hook may answer: it can veto a submit but never add to history."""


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


@dataclass
class InterceptorChain:
    """Runs interceptors and hooks in order; the first non-default answer wins."""

    interceptors: list[Interceptor] = field(default_factory=list)
    hooks: list[PromptHook] = field(default_factory=list)

    def prompt_submit(self, message: UserMessage) -> PromptAction:
        """Hooks may veto; interceptors may cancel or add items (all additions are kept)."""
        for hook in self.hooks:
            verdict = hook(message)
            if isinstance(verdict, Cancel):
                return verdict
        extra: list[Item] = []
        for interceptor in self.interceptors:
            action = interceptor.on_prompt_submit(message)
            if isinstance(action, Cancel):
                return action
            if isinstance(action, ContinueWith):
                extra.extend(action.items)
        return ContinueWith(tuple(extra)) if extra else Continue()

    def tool(self, call: ToolUseBlock) -> ToolAction:
        """The first Deny or Pause wins."""
        for interceptor in self.interceptors:
            action = interceptor.before_tool(call)
            if not isinstance(action, Continue):
                return action
        return Continue()

    def turn_end(self, items: Sequence[Item]) -> TurnEndAction:
        """The first ContinueWithMessages or Pause wins."""
        for interceptor in self.interceptors:
            action = interceptor.on_turn_end(items)
            if not isinstance(action, Finish):
                return action
        return Finish()
