"""What a hook command reads on stdin for an event: the JSON of Claude Code's contract, so its
users' hook scripts run unchanged (docs/hooks.md says which fields are filled and how). The
events themselves are :class:`orchestrator.core.interceptors.HookEvent`, one list for command
hooks and in-process interceptors alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.core.interceptors import HookEvent

__all__ = ["CLAUDE_PERMISSION_MODES", "HookContext"]


CLAUDE_PERMISSION_MODES = {
    "default": "default",
    "accept-edits": "acceptEdits",
    "read-only": "plan",
    "plan": "plan",
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
