"""The hook phases of a turn's start: ``SessionStart`` hooks (run while the pod serves, their
output awaited by the first turn) and ``UserPromptSubmit`` hooks deciding the prompt
(at once for in-process interceptors, in the turn task for commands)."""

from __future__ import annotations

import asyncio
import logging

from orchestrator.adapters.session import HeldPromptRecord
from orchestrator.capabilities.hooks import HookEvent
from orchestrator.core.interceptors import Cancel
from orchestrator.runtime.controller.conversation import commit
from orchestrator.runtime.controller.prompt import commit_prompt, held_record
from orchestrator.runtime.controller.rewind import keep_command_snapshot
from orchestrator.runtime.controller.state import ControllerState
from orchestrator.runtime.submit import Submission

log = logging.getLogger(__name__)


def decide_prompt(state: ControllerState, submission: Submission, turn: int) -> str | None:
    """Pass a new turn's prompt to its ``UserPromptSubmit`` interceptors and commit it; the
    reason when they cancel it. With hook commands configured, the prompt is held instead
    (on disk first, so a pod that stops meanwhile still has it) and the turn task asks them
    (:func:`submit_held_prompt`)."""
    command = submission.command
    if (
        submission.steps
        or (command is not None and command.model is not None)
        or state.interceptors.has(HookEvent.USER_PROMPT_SUBMIT)
    ):
        # Held on disk first: a command's ! lines run in the turn task, each recorded, and a
        # pod that dies meanwhile comes back with what ran and what did not; its model is
        # decided there too (the provider's list of models is asked).
        state.opening.prompt = submission
        state.transcript.record(held_record(submission, turn))
        return None
    message = submission.message()
    decision = state.interceptors.prompt_submit(message)
    if isinstance(decision, Cancel):
        state.alert("warn", "prompt_submit", f"submit cancelled: {decision.reason}")
        return decision.reason
    commit_prompt(state, submission, message, decision)
    return None


async def submit_held_prompt(state: ControllerState) -> bool:
    """Ask the ``UserPromptSubmit`` hooks about the held prompt, then commit it and what
    they added; False when they refused it (the turn ends, nothing committed)."""
    submission = state.opening.prompt
    if submission is None:
        return True
    message = submission.message()
    decision = await state.interceptors.user_prompt_submit(message)
    state.opening.prompt = None
    turn = state.history.turn
    if isinstance(decision, Cancel):
        state.transcript.record(HeldPromptRecord(phase="done", turn=turn))
        state.alert("warn", "prompt_submit", f"submit cancelled: {decision.reason}")
        return False
    commit_prompt(state, submission, message, decision)
    seq = state.prompt_seq
    if seq is not None and keep_command_snapshot(state, submission, seq):
        state.prompt_seq = None  # taken before its ! lines ran: the turn takes no other
    state.transcript.record(HeldPromptRecord(phase="done", turn=turn))
    return True


def start_session_hooks(state: ControllerState, source: str) -> None:
    """Run the ``SessionStart`` hooks (``startup`` or ``resume``) while the pod serves; the
    first turn waits for what they add."""
    if state.interceptors.has(HookEvent.SESSION_START):
        state.session_start = asyncio.ensure_future(state.interceptors.session_start(source))


async def close_hooks(state: ControllerState) -> None:
    """End hook commands still running with nobody waiting for them (the pod stops)."""
    pending, state.session_start = state.session_start, None
    if pending is not None and not pending.done():
        pending.cancel()
        await asyncio.wait([pending])
    if state.interceptors.commands is not None:
        await state.interceptors.commands.aclose()


async def add_session_context(state: ControllerState) -> None:
    """Commit what the ``SessionStart`` hooks printed, once they are done (shielded: a pause
    of the turn does not end them)."""
    kept, state.session_context = state.session_context, []
    for note in kept:
        commit(state, note)
    pending = state.session_start
    if pending is None:
        return
    try:
        notes = await asyncio.shield(pending)
    except asyncio.CancelledError:
        if not pending.done():
            raise  # the turn was interrupted; the hooks go on, the next turn waits again
        notes = []
    except Exception as exc:  # a failure here must not fail the turn
        log.warning("SessionStart hooks failed", exc_info=True)
        state.alert("warn", "hooks", f"SessionStart hooks failed: {type(exc).__name__}: {exc}")
        notes = []
    state.session_start = None
    for note in notes:
        commit(state, note)


__all__ = [
    "add_session_context",
    "close_hooks",
    "decide_prompt",
    "start_session_hooks",
    "submit_held_prompt",
]
