"""The interceptor chain: for each event, the in-process answers first
(:mod:`orchestrator.core.interceptors`), then the user's ``[hooks]`` commands.

It lives with the hooks capability, not in ``core``: it runs the commands (asynchronously,
through :class:`~orchestrator.capabilities.hooks.commands.CommandHooks`) and reads their
answers in Claude Code's dialect, while the verdicts it returns are core's pure values.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from orchestrator.capabilities.hooks.dialect import from_claude
from orchestrator.core.history import Item, SystemMessage, ToolUseBlock, UserMessage
from orchestrator.core.interceptors import (
    AfterTool,
    Cancel,
    Continue,
    ContinueWith,
    ContinueWithMessages,
    Deny,
    Finish,
    HookEvent,
    Interceptor,
    Pause,
    Proceed,
    PromptAction,
    PromptHook,
    ToolAction,
    TurnEndAction,
    hook_note,
)

if TYPE_CHECKING:
    from orchestrator.capabilities.hooks.commands import CommandHooks

__all__ = ["InterceptorChain"]


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
