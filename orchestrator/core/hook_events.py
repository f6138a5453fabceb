"""The points where a turn can be intercepted, by name (pure, and light: the config imports it
to check the ``[hooks]`` table, so it must not pull in the history as the verdicts do)."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["HookEvent"]


class HookEvent(StrEnum):
    """Where a turn can be intercepted: one list, for command hooks (``[hooks]``) and the
    in-process interceptors alike. The names are Claude Code's, so its users' hook scripts
    run unchanged (docs/hooks.md)."""

    PRE_TOOL_USE = "PreToolUse"
    POST_TOOL_USE = "PostToolUse"
    USER_PROMPT_SUBMIT = "UserPromptSubmit"
    STOP = "Stop"
    SUBAGENT_STOP = "SubagentStop"
    PRE_COMPACT = "PreCompact"
    SESSION_START = "SessionStart"
    NOTIFICATION = "Notification"
