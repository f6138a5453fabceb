"""The pod's permission mode as the rest of the pod sees it: recorded, announced, told.

A switch (:class:`~orchestrator.capabilities.permissions.modes.ModeSwitch`) is kept as a
``mode`` record (a restart takes it back), broadcast as a ``status`` with the new
``permission_mode``, and handed to the hooks' JSON. The model hears of it at the next round
boundary, as a system note committed with the queued notes: notes are only ever committed
there, where the history is wire-valid (never between a tool call and its result). The note
names the mode, so the pod knows what the model was last told from the history itself (after a
rewind or a compaction that dropped the note, it is told again).
"""

from __future__ import annotations

import dataclasses
import re
import time

from orchestrator.adapters.session import ModeRecord
from orchestrator.capabilities.permissions.modes import ModeChange
from orchestrator.config.permissions import Mode
from orchestrator.core.history import SystemMessage
from orchestrator.runtime.controller.state import ControllerState

__all__ = ["MODE_ORIGIN", "mode_changed", "mode_note", "told_mode"]

MODE_ORIGIN = "mode"
"""The ``origin`` of the system notes that tell the model its permission mode."""

_NOTE_MODE = re.compile(r"\[Permission mode: ([a-z-]+)\]")

_PLAN_NOTE = (
    "[Permission mode: plan] The pod is in plan mode: explore and plan, change nothing. "
    "Edits, commands, background jobs, sub-pods and MCP tools that are not read-only are "
    "refused without asking. Read files, search and think; when you know what you will do, "
    "call exit_plan_mode with your plan in markdown. The user approves it (the pod leaves plan "
    "mode and you carry it out) or tells you what to change."
)

_WHAT: dict[str, str] = {
    "default": "edits and commands run once the user approves them",
    "accept-edits": "edits run without asking; commands ask the user first",
    "yolo": "every tool runs without asking",
    "read-only": "only reads run; edits and commands are refused",
}


def note_text(mode: Mode) -> str:
    """What the model is told when the pod enters ``mode``."""
    if mode == "plan":
        return _PLAN_NOTE
    return f"[Permission mode: {mode}] The pod is now in {mode} mode: {_WHAT[mode]}."


def told_mode(state: ControllerState) -> str | None:
    """The mode the latest mode note in the history names; None when there is none."""
    for item in reversed(state.history.items):
        if isinstance(item, SystemMessage) and item.origin == MODE_ORIGIN:
            found = _NOTE_MODE.match(item.text)
            return found.group(1) if found else None
    return None


def mode_note(state: ControllerState) -> SystemMessage | None:
    """The note to commit at this round boundary: the mode now, when the model was last told
    another (a pod that never left its configured mode, other than ``plan``, says nothing)."""
    modes = state.modes
    if modes is None:
        return None
    mode = modes.mode
    if not modes.switched and mode != "plan":
        return None  # the common case, without reading the history
    told = told_mode(state)
    if told is None:
        told = modes.policy.configured if modes.policy.configured != "plan" else None
    if told == mode:
        return None
    return SystemMessage(text=note_text(mode), origin=MODE_ORIGIN)


def mode_changed(state: ControllerState, change: ModeChange) -> None:
    """Keep a switch in the session, hand it to the hooks, and broadcast the status."""
    assert state.modes is not None
    state.transcript.keep(
        ModeRecord(
            mode=change.new,
            before_plan=change.before_plan,
            configured=state.modes.policy.configured,
            source=change.source,
            at_ms=int(time.time() * 1000),
        )
    )
    commands = state.interceptors.commands
    if commands is not None:
        commands.context = dataclasses.replace(commands.context, permission_mode=change.new)
    state.board.mode_changed()
