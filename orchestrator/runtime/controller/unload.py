"""What an unload keeps of the pod's memory, and a load puts back (see
:mod:`orchestrator.runtime.unload`): queued notes, the paused turn's opening (its held prompt
and refs to pre-read), ``SessionStart`` output, untold job endings, touched files."""

from __future__ import annotations

import time

from orchestrator.adapters.session import HeldNote, HeldPrompt, UnloadRecord
from orchestrator.runtime.controller.prompt import grant_command
from orchestrator.runtime.controller.state import ControllerState
from orchestrator.runtime.custom_commands import PendingStep
from orchestrator.runtime.submit import Submission


def held(state: ControllerState) -> UnloadRecord:
    """What lives only in memory and an unload must keep; nothing is taken from the pod."""
    prompt = state.opening.prompt
    session_context = list(state.session_context)
    pending = state.session_start
    finished = pending is not None and pending.done() and not pending.cancelled()
    if pending is not None and finished and pending.exception() is None:
        session_context += pending.result()
    job_note = state.jobs.untold_note() if state.jobs is not None else None
    commands = state.interceptors.commands
    return UnloadRecord(
        at_ms=int(time.time() * 1000),
        turn=state.history.turn,
        paused=state.turn_is_open,
        notes=[HeldNote(note=note, repeats=n) for note, n in state.notes.waiting()],
        preread=list(state.opening.preread),
        prompt=HeldPrompt(
            segments=prompt.segments,
            text=prompt.text,
            attach=prompt.attach,
            preread=prompt.preread,
            request_id=prompt.request_id,
            steps=[step.to_json() for step in prompt.steps],
            command=prompt.command,
            snapshot=prompt.snapshot,
        )
        if prompt is not None
        else None,
        prompt_seq=state.prompt_seq,
        session_context=session_context,
        job_notes=[*state.job_notes, *([job_note] if job_note is not None else [])],
        touched=sorted(state.checkpoints.touched) if state.checkpoints is not None else [],
        hook_pins=commands.runner.pins() if commands is not None else {},
    )


def unfinished_work(state: ControllerState) -> list[str]:
    """Work of the pod's own, outside any task, that is not done yet (an unload waits)."""
    out: list[str] = []
    if state.session_start is not None and not state.session_start.done():
        out.append("SessionStart hooks are running")
    if state.turn_snapshot is not None and not state.turn_snapshot.done():
        out.append("a workspace snapshot is being taken")
    return out


def restore(state: ControllerState, kept: UnloadRecord) -> None:
    """Take back what :func:`held` kept when this session's pod was unloaded."""
    turn_state = kept.notes or kept.preread or kept.prompt or kept.prompt_seq is not None
    if turn_state and not state.turn_is_open:
        # Only a paused turn holds these, and a load finds the turn closed: never silently.
        state.alert(
            "warn",
            "pod",
            "the session was unloaded with a paused turn's notes or file refs, but its "
            "turn is closed now; they were dropped",
        )
    elif turn_state:
        for note in kept.notes:
            state.notes.put_back(note.note, note.repeats)
        state.opening.preread = list(kept.preread)
        if kept.prompt is not None:
            state.opening.prompt = Submission(
                segments=list(kept.prompt.segments),
                text=kept.prompt.text,
                attach=list(kept.prompt.attach),
                preread=list(kept.prompt.preread),
                request_id=kept.prompt.request_id,
                steps=[PendingStep.from_json(step) for step in kept.prompt.steps],
                command=kept.prompt.command,
                snapshot=kept.prompt.snapshot,
            )
            grant_command(state, kept.prompt.command, say=False)
        state.prompt_seq = kept.prompt_seq
    state.session_context = list(kept.session_context)
    state.job_notes = list(kept.job_notes)
    if state.checkpoints is not None:
        state.checkpoints.touched.update(kept.touched)
    if state.interceptors.commands is not None:
        # The fingerprints of the pod's first start, not this load's: a hook script changed
        # while the pod was unloaded is still a changed one.
        state.interceptors.commands.runner.keep_pins(kept.hook_pins)


__all__ = ["held", "restore", "unfinished_work"]
