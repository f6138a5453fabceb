"""Rewinds and the checkpoints they go back to: the turn's snapshot (taken while its first
request streams), a round's snapshot before tools that may change files, and the rewind task
(files restored intent first, then the conversation's tail dropped)."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from orchestrator.adapters.session import RewindRecord, RewindRestore, SessionWriteError
from orchestrator.capabilities.checkpoints import CheckpointError
from orchestrator.core.history import ToolUseBlock
from orchestrator.core.rewind import RewindError, RewindPlan, plan_rewind, typed_line
from orchestrator.protocol import ErrorData, RewindData, RewindFilesData
from orchestrator.runtime.controller.prompt import held_record
from orchestrator.runtime.controller.state import ControllerState, in_phase, task_crashed
from orchestrator.runtime.pod_task import Outcome
from orchestrator.runtime.submit import Submission


def rewind_data(plan: RewindPlan, files: RewindFilesData | None) -> RewindData:
    """A rewind as clients see it (``rewind_preview`` and ``rewound`` carry the same)."""
    return RewindData(
        to=plan.target.seq,
        restore=plan.restore,
        prompt=typed_line(plan.target),
        dropped=plan.dropped if plan.conversation else 0,
        files=files,
    )


def check_rewind(state: ControllerState, to: int | None, restore: RewindRestore) -> RewindPlan:
    """Check a rewind against the conversation and its checkpoints (RewindError)."""
    if restore != "conversation" and state.checkpoints is None:
        raise RewindError(
            "cannot restore files: workspace checkpoints are off (checkpoints = false); "
            "rewind the conversation only"
        )
    records = state.checkpoints.records if state.checkpoints is not None else []
    return plan_rewind(state.transcript.view(), records, to, restore)


async def preview_rewind(state: ControllerState, plan: RewindPlan) -> RewindData:
    """What the rewind would change, changing nothing."""
    files = None
    if plan.code and plan.checkpoint is not None and state.checkpoints is not None:
        files = await state.checkpoints.preview(plan.checkpoint.id)
    return rewind_data(plan, files)


def start_rewind(state: ControllerState) -> None:
    """Launch the rewind asked for; the machine waits in ``rewinding`` until it is done."""
    to, restore = state.rewind_request or (None, "both")
    state.rewind_request = None
    state.task.start(
        drive_rewind(state, to, restore), interrupted=("rewind_failed", None), name="rewind"
    )


async def drive_rewind(state: ControllerState, to: int | None, restore: RewindRestore) -> Outcome:
    """Restore files (intent first, so a crash replays it), record, then drop the tail."""
    intent = False
    try:
        plan = check_rewind(state, to, restore)
        files = None
        if plan.code and plan.checkpoint is not None and state.checkpoints is not None:
            record = RewindRecord(
                phase="intent",
                to_seq=plan.target.seq,
                restore=plan.restore,
                checkpoint=plan.checkpoint.id,
            )
            state.transcript.record(record)
            intent = True
            files, before = await state.checkpoints.restore(plan.checkpoint.id)
            state.transcript.record(record.model_copy(update={"phase": "done", "before": before}))
        else:
            state.transcript.record(
                RewindRecord(phase="done", to_seq=plan.target.seq, restore=plan.restore)
            )
    except asyncio.CancelledError:
        return "rewind_failed", None
    except (RewindError, CheckpointError, SessionWriteError) as exc:
        message = f"rewind failed: {exc}"
        if intent:
            # The intent is on disk: the next start finishes the rewind (restoring is
            # idempotent); until then the files may be partly restored.
            message += (
                "; the files may be partly restored until the pod's next start, which "
                "finishes the rewind"
            )
        state.emit("error", ErrorData(code="invalid_request", message=message))
        state.alert("error", "rewind", message)
        return "rewind_failed", None
    except Exception as exc:  # a bug must still bring the machine out of rewinding
        task_crashed(state, "rewind", exc)
        return "rewind_failed", None
    if plan.conversation:
        state.transcript.rewind(plan.target.seq)
        state.context.reset()  # what was spent stays spent: session_usage is kept
        if state.todos is not None:
            state.todos.rewind(plan.target.seq)  # the list as it was before that prompt
    state.emit("rewound", rewind_data(plan, files))
    return "rewind_done", None


def checkpoint_turn(state: ControllerState) -> None:
    """Start the snapshot of the workspace as a turn with a prompt begins (once per prompt).
    It runs while the first request streams: nothing changes the files before the turn's
    first tools, which wait for it (:func:`before_tools`)."""
    seq, state.prompt_seq = state.prompt_seq, None
    if seq is not None and state.checkpoints is not None:
        state.turn_snapshot = asyncio.ensure_future(
            state.checkpoints.snapshot(seq=seq, turn=state.history.turn, reason="turn")
        )


async def snapshot_before_commands(state: ControllerState) -> None:
    """The turn's snapshot, taken before a custom command's ``!`` lines run (they may change
    files before the prompt is committed): held with the prompt, on disk before the first
    line starts, and kept as the turn's checkpoint when the prompt is committed
    (:func:`keep_command_snapshot`), so a rewind to that prompt undoes what the lines did. A
    prompt that holds one already (a restart mid-lines) keeps it."""
    submission = state.opening.prompt
    if submission is None or submission.snapshot is not None or state.checkpoints is None:
        return
    if not any(step.kind == "bash" and step.state != "done" for step in submission.steps):
        return
    turn = state.history.turn
    with in_phase(state, "snapshot"):
        taken = await asyncio.shield(
            state.checkpoints.snapshot(seq=0, turn=turn, reason="turn", keep=False)
        )
    if taken is not None:
        state.opening.prompt = dataclasses.replace(submission, snapshot=taken)
        state.transcript.record(held_record(state.opening.prompt, turn))


def keep_command_snapshot(state: ControllerState, submission: Submission, seq: int) -> bool:
    """Keep the snapshot a command's prompt holds as the checkpoint of its user message
    ``seq``; False when it holds none (the turn takes its own, :func:`checkpoint_turn`)."""
    if submission.snapshot is None or state.checkpoints is None:
        return False
    record = submission.snapshot.model_copy(update={"seq": seq, "turn": state.history.turn})
    state.checkpoints.adopt(record)
    return True


async def turn_snapshot_taken(state: ControllerState) -> None:
    """Wait for the turn's snapshot, if one is still being taken (its record on disk); the
    turn is in its ``snapshot`` phase meanwhile."""
    pending, state.turn_snapshot = state.turn_snapshot, None
    if pending is not None:
        with in_phase(state, "snapshot"):
            # Shielded: an interrupt of the turn must not leave a half-taken snapshot behind.
            await asyncio.shield(pending)


def _changes_files(tool: Any) -> bool:
    """Whether a call of ``tool`` may change the workspace (unknown tools may)."""
    return tool is None or bool(getattr(tool, "side_effects", True))


async def before_tools(state: ControllerState, calls: list[ToolUseBlock]) -> None:
    """Snapshot the workspace before a round whose tools may change it (a round of reads
    lets the turn's snapshot go on meanwhile)."""
    checkpoints = state.checkpoints
    if checkpoints is None:
        return
    registry = state.tools.registry
    changing = [call for call in calls if _changes_files(registry.get(call.name))]
    if not changing:
        return
    # No tool changed the files since the turn began while its snapshot is pending.
    unchanged_since_turn = state.turn_snapshot is not None
    await turn_snapshot_taken(state)
    touched = set(checkpoints.touched)
    for call in changing:
        path = call.input.get("path") if isinstance(call.input, dict) else None
        if isinstance(path, str):
            checkpoints.touched.add(path)
    if unchanged_since_turn and not (checkpoints.touched_only and checkpoints.touched != touched):
        return  # the turn's snapshot is the state these tools start from
    seq = state.history.next_seq
    await checkpoints.snapshot(seq=seq, turn=state.history.turn, reason="round")


__all__ = [
    "before_tools",
    "check_rewind",
    "checkpoint_turn",
    "drive_rewind",
    "keep_command_snapshot",
    "preview_rewind",
    "rewind_data",
    "snapshot_before_commands",
    "start_rewind",
    "turn_snapshot_taken",
]
