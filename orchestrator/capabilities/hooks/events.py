"""The events a turn can be intercepted at: one list, for command hooks (``[hooks]``) and
for the in-process interceptors of :mod:`orchestrator.core.interceptors` alike.

The names and the JSON a command reads on stdin are Claude Code's, so its users' hook
scripts run unchanged (docs/hooks.md says which fields are filled and how).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any


class HookEvent(StrEnum):
    """Where a turn can be intercepted."""

    PRE_TOOL_USE = "PreToolUse"
    POST_TOOL_USE = "PostToolUse"
    USER_PROMPT_SUBMIT = "UserPromptSubmit"
    STOP = "Stop"
    SUBAGENT_STOP = "SubagentStop"
    PRE_COMPACT = "PreCompact"
    SESSION_START = "SessionStart"
    NOTIFICATION = "Notification"


CLAUDE_PERMISSION_MODES = {
    "default": "default",
    "accept-edits": "acceptEdits",
    "read-only": "plan",
    "yolo": "bypassPermissions",
}
"""This pod's permission modes by the names Claude Code's hooks know them."""


@dataclass(frozen=True, slots=True)
class HookContext:
    """What every event's JSON carries: which session, where, and under which mode."""

    session_id: str
    transcript_path: Path
    cwd: Path
    permission_mode: str

    def payload(self, event: HookEvent, **fields: Any) -> dict[str, Any]:
        """The JSON a hook reads on stdin for ``event`` (pure)."""
        return {
            "session_id": self.session_id,
            "transcript_path": str(self.transcript_path),
            "cwd": str(self.cwd),
            "permission_mode": CLAUDE_PERMISSION_MODES.get(
                self.permission_mode, self.permission_mode
            ),
            "hook_event_name": str(event),
            **fields,
        }
