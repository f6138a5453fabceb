"""A custom command's ``!`command` `` lines (and an MCP prompt's text), run as the turn
starts, before its prompt is committed.

Each line is a ``bash`` call through the pod's tool runner, so it meets exactly what a call
of the model's meets: ``PreToolUse`` hooks, the permission rules (an ``ask`` waits in
``awaiting_approval``; a ``deny`` leaves it unrun), the sandbox, the content cap. Its result
is not committed as a tool call: it goes into the expansion, in its marker's place.

Never twice: the held prompt's record is written again, synced, before each line starts
(``started``) and once it is done (``done``, with its output). A restart runs only the lines
still ``pending``; a line found ``started`` may have run, so it is not run again and the
expansion says so. A pause while a line waits for approval puts it back to ``pending`` (it
never ran); a pause while it runs keeps what it printed, marked interrupted.
"""

from __future__ import annotations

import asyncio
import dataclasses

from orchestrator.core.history import Item, ToolResult, ToolUseBlock
from orchestrator.runtime.controller.prompt import held_record
from orchestrator.runtime.controller.state import ControllerState
from orchestrator.runtime.custom_commands import PendingStep, fill_markers
from orchestrator.runtime.submit import Submission
from orchestrator.runtime.tool_runner import ToolsPaused

__all__ = ["run_steps"]


async def run_steps(state: ControllerState) -> None:
    """Run what the held prompt's expansion waits for, then put the outputs in its text."""
    submission = state.opening.prompt
    if submission is None or not submission.steps:
        return
    turn = state.history.turn
    for step in submission.steps:
        if step.state == "done":
            continue
        if step.state == "started":
            step.output = (
                f"[{_what(step)} was not run again: the pod stopped while it was running or "
                "waiting for approval, so it may have run; check its effects before repeating it]"
            )
            step.state = "done"
            state.transcript.record(held_record(submission, turn))
            continue
        step.state = "started"
        try:
            await state.transcript.persist(held_record(submission, turn))
        except asyncio.CancelledError:
            # Interrupted while the record was synced: the step never started.
            step.state = "pending"
            state.transcript.record(held_record(submission, turn))
            raise
        if step.kind == "bash":
            await _run_line(state, submission, step)
        else:
            try:
                step.output = await _fetch_prompt(state, step)
            except asyncio.CancelledError:
                step.state = "pending"  # only a read: Resume fetches it again
                state.transcript.record(held_record(submission, turn))
                raise
        step.state = "done"
        state.transcript.record(held_record(submission, turn))
    state.opening.prompt = dataclasses.replace(
        submission, text=fill_markers(submission.text, submission.steps), steps=[]
    )


def _what(step: PendingStep) -> str:
    return f"the command `{step.command}`" if step.kind == "bash" else f"the prompt {step.command}"


async def _run_line(state: ControllerState, submission: Submission, step: PendingStep) -> None:
    """One ``!`` line as a ``bash`` call: its output (or why it did not run) into ``step``."""
    call = ToolUseBlock(id=step.call_id, name="bash", input={"command": step.command})
    results: list[ToolResult] = []

    def keep(item: Item) -> Item:
        if isinstance(item, ToolResult):
            results.append(item)
        return item

    state.machine.send("tools_started")
    try:
        await state.tools.run_calls([call], keep, state.machine.send)
    except asyncio.CancelledError:
        if results:  # it ran, and was interrupted: what it printed stays, said so
            step.output = _output(step, results[-1])
            step.state = "done"
        else:  # it never started (waiting for approval): Resume asks again
            step.state = "pending"
        state.transcript.record(held_record(submission, state.history.turn))
        raise
    except ToolsPaused as paused:
        # A PreToolUse hook would pause the model's call; a command's line is left unrun.
        results.append(
            ToolResult(call_id=call.id, summary=f"not run: {paused.reason}", is_error=True)
        )
    state.machine.send("round_done")
    step.output = _output(step, results[-1]) if results else f"[`{step.command}` was not run]"


async def _fetch_prompt(state: ControllerState, step: PendingStep) -> str:
    """An MCP prompt's text for the expansion (or why there is none, which the model reads)."""
    servers = state.board.mcp
    server = next((s for s in servers.servers if s.name == step.server), None) if servers else None
    if server is None:
        return f"[the prompt {step.command} of MCP server {step.server}: no such server runs]"
    # Imported here: the MCP SDK is slow to import, and only a pod with servers needs it.
    from orchestrator.adapters.mcp.prompts import prompt_text
    from orchestrator.capabilities.tools.base import ToolError

    try:
        result = await server.get_prompt(step.command, step.arguments)
    except ToolError as exc:
        state.alert("warn", "mcp", str(exc))
        return f"[the prompt {step.command} of MCP server {step.server} failed: {exc}]"
    return prompt_text(result)


def _output(step: PendingStep, result: ToolResult) -> str:
    """What the expansion says in the line's place: its output, or why there is none."""
    content = (result.content or "").rstrip("\n")
    if not result.is_error:
        return content or f"[`{step.command}` printed nothing]"
    said = f"[`{step.command}` — {result.summary}]"
    return f"{said}\n{content}" if content else said
