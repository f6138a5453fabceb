"""Interceptors: the points where the pod (or an embedding program) may steer a turn.

There is one list of such points, :class:`~orchestrator.capabilities.hooks.HookEvent`, and two forms of
answering them, asked in this order by the :class:`InterceptorChain`:

1. **in process** (this module): an embedding program's objects, whose methods are named
   after the events they answer. Interceptors can change what happens; read-only hooks
   (:class:`PromptHook`) can only watch, and their narrower result type keeps them that way.

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
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias

from orchestrator.capabilities.hooks.dialect import from_claude
from orchestrator.capabilities.hooks.events import HookEvent
from orchestrator.core.history import Item, SystemMessage, ToolUseBlock, UserMessage

if TYPE_CHECKING:
    from orchestrator.capabilities.hooks.commands import CommandHooks


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


@dataclass
class InterceptorChain:
    """Runs interceptors and hooks in order; the first non-default answer wins."""

    interceptors: list[Interceptor] = field(default_factory=list)
    hooks: list[PromptHook] = field(default_factory=list)
    commands: CommandHooks | None = None
    """The user's ``[hooks]`` commands, asked after the in-process answers."""

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

    # -- every event, in-process answers first, then the user's commands ----------------------

    def has(self, event: HookEvent) -> bool:
        """Whether commands are configured for ``event`` (in-process answers are cheap)."""
        return self.commands is not None and self.commands.has(event)

    async def user_prompt_submit(self, message: UserMessage) -> PromptAction:
        """``UserPromptSubmit``: a refusal cancels the submit; context lands after it."""
        action = self.prompt_submit(message)
        if isinstance(action, Cancel) or self.commands is None:
            return action
        verdict = await self.commands.fire(HookEvent.USER_PROMPT_SUBMIT, {"prompt": message.text})
        if verdict.block or verdict.stop:
            return Cancel(verdict.reason or verdict.stop or "a UserPromptSubmit hook refused it")
        items = [*(action.items if isinstance(action, ContinueWith) else ())]
        items += [hook_note(HookEvent.USER_PROMPT_SUBMIT, text) for text in verdict.context]
        return ContinueWith(tuple(items)) if items else Continue()

    async def pre_tool_use(self, call: ToolUseBlock) -> ToolAction:
        """``PreToolUse``: deny, pause, or go on (with a permission or a new input)."""
        action = self.tool(call)
        commands = self.commands
        if not isinstance(action, Continue) or commands is None:
            return action
        verdict = await commands.fire(
            HookEvent.PRE_TOOL_USE,
            commands.tool_fields(call.name, call.input, call.id),
            subject=call.name,
            tool=call.name,
            call_id=call.id,
        )
        if verdict.permission == "deny":
            return Deny(f"a PreToolUse hook blocked this call: {verdict.reason or 'no reason'}")
        if verdict.stop:
            return Pause(verdict.stop)
        rewritten = (
            from_claude(call.name, verdict.updated_input, commands.runner.workspace)
            if verdict.updated_input is not None
            else None
        )
        if verdict.permission is None and rewritten is None:
            return Continue()
        return Proceed(permission=verdict.permission, input=rewritten, reason=verdict.reason)

    async def post_tool_use(
        self, call: ToolUseBlock, summary: str, content: str, is_error: bool
    ) -> AfterTool:
        """``PostToolUse``: feedback and context for the model, read with the result."""
        commands = self.commands
        if commands is None:
            return AfterTool()
        fields = commands.tool_fields(call.name, call.input, call.id)
        fields["tool_response"] = {"summary": summary, "content": content, "is_error": is_error}
        verdict = await commands.fire(
            HookEvent.POST_TOOL_USE, fields, subject=call.name, tool=call.name, call_id=call.id
        )
        notes = (
            *(f"[PostToolUse hook] {reason}" for reason in verdict.reasons),
            *(f"[PostToolUse hook context] {text}" for text in verdict.context),
        )
        return AfterTool(notes=notes, stop=verdict.stop)

    async def stop(self, items: Sequence[Item], *, active: bool, subagent: bool) -> TurnEndAction:
        """``Stop`` (``SubagentStop`` in a child pod): a hook may make the model go on.

        ``active``: the turn already goes on because of a stop hook (so a hook can tell, and
        not keep a turn going forever).
        """
        action = self.turn_end(items)
        if not isinstance(action, Finish) or self.commands is None:
            return action
        event = HookEvent.SUBAGENT_STOP if subagent else HookEvent.STOP
        verdict = await self.commands.fire(event, {"stop_hook_active": active})
        if verdict.block and not verdict.stop:
            note = hook_note(event, verdict.reason or "go on")
            return ContinueWithMessages((note,))
        return action

    async def pre_compact(self, trigger: str, instructions: str | None) -> None:
        """``PreCompact``: the commands are told; they cannot stop it."""
        if self.commands is not None:
            fields = {"trigger": trigger, "custom_instructions": instructions or ""}
            await self.commands.fire(HookEvent.PRE_COMPACT, fields, subject=trigger)

    async def session_start(self, source: str) -> list[SystemMessage]:
        """``SessionStart``: what the commands print is context for the next turn."""
        if self.commands is None:
            return []
        verdict = await self.commands.fire(
            HookEvent.SESSION_START, {"source": source}, subject=source
        )
        return [hook_note(HookEvent.SESSION_START, text) for text in verdict.context]

    def notification(self, message: str, kind: str) -> None:
        """``Notification``: a person is needed (the commands run in the background)."""
        if self.commands is not None:
            self.commands.notify(message, kind)


def hook_note(event: HookEvent, text: str) -> SystemMessage:
    """What a hook adds for the model, marked with the event that added it."""
    return SystemMessage(text=f"[{event} hook] {text}", origin="hook")
