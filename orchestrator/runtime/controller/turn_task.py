"""The turn task: the turn's start phases, then :class:`~orchestrator.runtime.turn.Turn`'s
rounds; how it ended is reported to the machine from the task's done callback."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from typing import Any

from pydantic import BaseModel

from orchestrator.adapters.session import SessionWriteError
from orchestrator.core.history import History, Item, ToolUseBlock
from orchestrator.core.preread import PREREAD_ORIGIN
from orchestrator.core.thinking import ThinkingPlan
from orchestrator.core.web import WebPlan
from orchestrator.protocol import ErrorData
from orchestrator.runtime.command_model import decide_model, use_turn_model
from orchestrator.runtime.compaction import CompactionRequest, Compactor
from orchestrator.runtime.context import Context
from orchestrator.runtime.controller import budget, conversation
from orchestrator.runtime.controller.command_lines import run_steps
from orchestrator.runtime.controller.compaction import take_compaction_request
from orchestrator.runtime.controller.hooks import add_session_context, submit_held_prompt
from orchestrator.runtime.controller.rewind import (
    before_tools,
    checkpoint_turn,
    snapshot_before_commands,
    turn_snapshot_taken,
)
from orchestrator.runtime.controller.state import ControllerState, in_phase
from orchestrator.runtime.file_refs import preread_files, resolve_segments, synthetic_read_items
from orchestrator.runtime.pod_task import Outcome
from orchestrator.runtime.turn import Turn, TurnError

log = logging.getLogger(__name__)


class _TurnHost:
    """What the turn loop needs of the pod (:class:`~orchestrator.runtime.turn.TurnHost`),
    over the controller's state."""

    def __init__(self, state: ControllerState) -> None:
        self._state = state
        self.history: History = state.history

    @property
    def context(self) -> Context:
        return self._state.context

    @property
    def compactor(self) -> Compactor:
        return self._state.compactor

    @property
    def thinking_plan(self) -> ThinkingPlan:
        return conversation.thinking_plan(self._state)

    @property
    def web_plan(self) -> WebPlan:
        return conversation.web_plan(self._state)

    def commit(self, item: Item) -> Item:
        return conversation.commit(self._state, item)

    def emit(self, event: str, data: BaseModel | dict[str, Any]) -> None:
        self._state.emit(event, data)

    def alert(self, level: str, source: str, message: str) -> None:
        self._state.alert(level, source, message)

    def signal(self, event: str) -> None:
        self._state.machine.send(event)

    async def before_tools(self, calls: list[ToolUseBlock]) -> None:
        await before_tools(self._state, calls)

    async def wire_messages(self) -> list[dict[str, Any]]:
        return await conversation.wire_messages(self._state)

    def take_compaction_request(self) -> CompactionRequest | None:
        return take_compaction_request(self._state)

    async def learn_window(self) -> None:
        await conversation.learn_window(self._state)


def launch(
    state: ControllerState, *, cancelled: str | None = None, failure: str | None = None
) -> None:
    """Start the turn task (``cancelled``: it ends at once so; ``failure``: it fails so)."""
    config = state.config
    turn = Turn(
        host=_TurnHost(state),
        provider=state.provider,
        tools=state.tools,
        interceptors=state.interceptors,
        system_prompt=state.system_prompt,
        model=state.provider.model,
        max_tokens=config.max_tokens,
        max_rounds=config.max_rounds,
        validator=state.validator,
        cache_ttl=None if config.prompt_cache == "off" else config.prompt_cache,
        max_tokens_spent=config.max_turn_tokens,
        spent=lambda: state.turn_usage.context_tokens + state.turn_usage.output_tokens,
        budget_reached=lambda tokens: budget.reached(state, tokens),
        budgeted=lambda: budget.caps_of(state).any,
        subagent=config.subpods.depth > 0,
        fallback=state.fallback,
    )
    state.task.start(
        _drive(state, turn, cancelled, failure),
        interrupted=("turn_interrupted", "cancelled"),
        name=f"turn-{state.history.turn}",
    )


async def _start_phases(state: ControllerState) -> bool:
    """The turn's start, one phase at a time; False when the prompt's hooks refused it."""
    with in_phase(state, "session_start"):
        await add_session_context(state)
    held = state.opening.prompt
    if held is not None and held.command is not None and not held.command.decided:
        with in_phase(state, "commands"):
            await decide_model(state)
    if state.opening.prompt is not None and state.opening.prompt.steps:
        # Before the ! lines: a rewind to this prompt undoes what they changed too.
        await snapshot_before_commands(state)
        with in_phase(state, "commands"):
            await run_steps(state)
    with in_phase(state, "prompt_submit"):
        if not await submit_held_prompt(state):
            return False
    checkpoint_turn(state)
    if state.opening.preread:
        with in_phase(state, "preread"):
            await conversation.learn_window(state)
            if conversation.thinking_plan(state).on:
                _attach_prereads(state)
            else:
                await _read_mentions(state)
    return True


async def _drive(
    state: ControllerState, turn: Turn, cancelled: str | None, failure: str | None
) -> Outcome:
    """Run the turn; returns the machine event for how it ended and its result."""
    try:
        if failure is not None:
            raise TurnError(failure, code="internal")
        if cancelled is not None:
            return "turn_finished", "cancelled"
        if not await _start_phases(state):
            return "turn_finished", "cancelled"
        # A command's model holds the turn (its user message says so, a restart included).
        turn.fallback = use_turn_model(state) or state.fallback
        result = await turn.run()
        # Recorded before the turn ends, so a rewind right after it finds it.
        await turn_snapshot_taken(state)
    except asyncio.CancelledError:
        return "turn_interrupted", "cancelled"
    except TurnError as exc:
        state.emit("error", ErrorData(code=exc.code, message=str(exc)))  # type: ignore[arg-type]
        state.alert("error", "turn", str(exc))
        return "turn_failed", "errored"
    except SessionWriteError as exc:
        # The transcript has alerted already; what it could not write waits in memory.
        state.emit("error", ErrorData(code="session_write", message=str(exc)))
        return "turn_failed", "errored"
    except Exception as exc:  # a bug in the loop must still end the turn cleanly
        log.exception("turn task crashed")
        message = f"internal error: {type(exc).__name__}: {exc}"
        state.emit("error", ErrorData(code="internal", message=message))
        state.alert("error", "turn", message)
        return "turn_failed", "errored"
    if result == "paused":
        return "turn_paused", None
    return "turn_finished", result


def _attach_prereads(state: ControllerState) -> None:
    """The refs a synthetic read would have read, attached as ``[File: …]`` messages.

    A synthetic read is a tool loop the model did not start: its assistant message has no
    thinking to begin with, and with thinking on the API refuses to continue such a loop. The
    messages' origin tells front-ends to draw them as the Read card they stand for.
    """
    resolution = resolve_segments(
        state.fs,
        list(state.opening.preread),
        max_bytes=state.config.file_ref_max_bytes,
        max_refs=state.config.max_preread_files,
    )
    for failure in resolution.failures:
        state.alert("warn", "file_ref", failure.alert_message)
    state.opening.preread = []
    for item in resolution.items:
        conversation.commit(state, dataclasses.replace(item, origin=PREREAD_ORIGIN))


async def _read_mentions(state: ControllerState) -> None:
    """The synthetic-read style: a Read tool call and its results, committed together.

    The list stays on the open turn until the reads are committed, so a pause in the middle
    of them is resumed with the reads still to do.
    """
    results = await preread_files(
        state.fs,
        state.opening.preread,
        # A synthetic read must look exactly like a real one, cap included.
        max_bytes=state.config.content_cap("read_file"),
        max_files=state.config.max_preread_files,
    )
    items, failures = synthetic_read_items(results, turn=state.history.turn)
    for failure in failures:
        state.alert("warn", "file_ref", failure.alert_message)
    state.opening.preread = []
    for item in items:
        conversation.commit(state, item)


__all__ = ["launch"]
