"""The compaction task between turns, and a ``compact`` asked for until it is taken (between
turns by this task, or at a round boundary by the turn)."""

from __future__ import annotations

import asyncio

from orchestrator.adapters.session import SessionWriteError
from orchestrator.capabilities.hooks import HookEvent
from orchestrator.protocol import ErrorData
from orchestrator.runtime.compaction import CompactionError, CompactionNotSmaller, CompactionRequest
from orchestrator.runtime.controller import budget
from orchestrator.runtime.controller.conversation import learn_window, thinking_plan, web_plan
from orchestrator.runtime.controller.state import ControllerState, task_crashed
from orchestrator.runtime.pod_task import Outcome
from orchestrator.runtime.turn import TurnError


def take_compaction_request(state: ControllerState) -> CompactionRequest | None:
    """A compaction asked for since the last round boundary (and forget it)."""
    request, state.compaction_request = state.compaction_request, None
    return request


def start_compaction(state: ControllerState) -> None:
    """Launch a compaction between turns; the machine waits in ``compacting``."""
    # The request is taken now, not when the task first runs: an interrupt read in the same
    # write cancels the task before its first step, and a request left behind would start
    # the compaction again the moment the machine is back in idle.
    request = take_compaction_request(state) or CompactionRequest(trigger="manual")
    state.task.start(
        drive_compaction(state, request),
        interrupted=("compaction_failed", None),
        name=f"compaction-{state.history.turn}",
    )


async def drive_compaction(state: ControllerState, request: CompactionRequest) -> Outcome:
    """A compaction between turns: ``compaction_done``, or ``compaction_failed``."""
    interceptors = state.interceptors
    try:
        await learn_window(state)
        stop = budget.would_stop(state, session_only=not state.turn_is_open)
        if stop is not None:
            # A summary is a request like any other: none starts past a budget.
            state.alert(
                "error",
                "compaction",
                f"not compacted: the budget is reached (spent ${stop.spent:.4f} of "
                f"{stop.cap} ${stop.limit:.4f}); raise it (pod budget set {stop.flag} AMOUNT) "
                "and compact again",
            )
            return "compaction_failed", None
        if interceptors.has(HookEvent.PRE_COMPACT):
            await interceptors.pre_compact(request.trigger, request.focus)
        compaction = await state.compactor.compact(
            request,
            system=state.system_prompt,
            tools=web_plan(state).client_tools(state.tools.registry.specs()),
            model=state.provider.model,
            max_tokens=state.config.max_tokens,
            thinking=thinking_plan(state),
        )
    except asyncio.CancelledError:
        return "compaction_failed", None
    except CompactionNotSmaller as exc:  # nothing changed, as when nothing was to compact
        state.alert("info", "compaction", str(exc))
        return "compaction_done", None
    except (CompactionError, SessionWriteError) as exc:
        state.emit("error", ErrorData(code="provider_error", message=str(exc)))
        state.alert("error", "compaction", f"compaction failed: {exc}")
        return "compaction_failed", None
    except TurnError as exc:  # the model refuses the thinking settings (said already)
        state.emit("error", ErrorData(code=exc.code, message=str(exc)))  # type: ignore[arg-type]
        return "compaction_failed", None
    except Exception as exc:  # a bug must still bring the machine out of compacting
        task_crashed(state, "compaction", exc)
        return "compaction_failed", None
    if compaction is None:
        state.alert("info", "compaction", "nothing to compact yet")
    elif interceptors.has(HookEvent.SESSION_START):
        try:
            for note in await interceptors.session_start("compact"):
                state.notes.add(note)
        except asyncio.CancelledError:
            pass  # the compaction is committed; the hooks count as not run
    return "compaction_done", None


__all__ = ["drive_compaction", "start_compaction", "take_compaction_request"]
