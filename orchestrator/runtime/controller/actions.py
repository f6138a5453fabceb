"""The machine's actions: the :class:`states.LifecycleModel` surface the lifecycle machine
calls on its edges, each short and handing its work to a feature module."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from orchestrator.adapters.mcp.elicitations import Action, Elicitations
from orchestrator.adapters.providers.base import Provider
from orchestrator.adapters.scoped_fs import ScopedFS
from orchestrator.adapters.session import HeldPromptRecord, RewindRestore
from orchestrator.capabilities.hooks.chain import InterceptorChain
from orchestrator.capabilities.permissions.approvals import Answer, Approvals
from orchestrator.capabilities.permissions.modes import ModeSwitch, parse_mode
from orchestrator.config.model import PodConfig
from orchestrator.core.history import SystemMessage, ToolResult
from orchestrator.core.repair import close_orphans, interrupt_note, pending_tool_calls
from orchestrator.core.segments import Segment, flatten_segments
from orchestrator.core.server_loop import awaits_continuation
from orchestrator.core.usage import TokenUsage
from orchestrator.protocol import RunEndData, TurnEndData, TurnStartData
from orchestrator.runtime import model_choice
from orchestrator.runtime.compaction import CompactionRequest, Compactor
from orchestrator.runtime.context import Context, usage_of
from orchestrator.runtime.controller import (
    budget,
    compaction,
    conversation,
    modes,
    rewind,
    turn_task,
)
from orchestrator.runtime.controller.hooks import decide_prompt
from orchestrator.runtime.controller.prompt import (
    grant_command,
    held_submission,
    resolve_prompt,
)
from orchestrator.runtime.controller.state import TurnOpening
from orchestrator.runtime.controller.surface import ControllerSurface
from orchestrator.runtime.fallback import usage_by_model
from orchestrator.runtime.pod_task import PodTask
from orchestrator.runtime.status import StatusBoard
from orchestrator.runtime.tool_runner import ToolRunner
from orchestrator.runtime.transcript import Transcript
from states import PodLifecycle
from states.outcomes import (
    is_stopped,
    run_failed,
    run_leaves_work_going,
    start_state,
    turn_told_upward,
)

if TYPE_CHECKING:
    from orchestrator.capabilities.jobs import Jobs
    from orchestrator.runtime.checkpointing import Checkpointer

log = logging.getLogger(__name__)


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Controller(ControllerSurface):
    """Owns one pod's lifecycle machine, history and task; the machine's model."""

    def __init__(
        self,
        *,
        config: PodConfig,
        provider: Provider,
        tools: ToolRunner,
        fs: ScopedFS,
        transcript: Transcript,
        system_prompt: str,
        context: Context,
        approvals: Approvals,
        start_paused: bool = False,
        interceptors: InterceptorChain,
        on_stopped: Callable[[], None] | None = None,
        upward: Callable[[str, str], None] | None = None,
        checkpoints: Checkpointer | None = None,
        jobs: Jobs | None = None,
        held_prompt: HeldPromptRecord | None = None,
    ) -> None:
        super().__init__(
            config=config,
            provider=provider,
            tools=tools,
            fs=fs,
            transcript=transcript,
            system_prompt=system_prompt,
            context=context,
            approvals=approvals,
            interceptors=interceptors,
            on_stopped=on_stopped,
            upward=upward,
            checkpoints=checkpoints,
            jobs=jobs,
            turn_is_open=start_paused,
            opening=TurnOpening(
                prompt=held_submission(held_prompt) if held_prompt is not None else None
            ),
        )
        self.history = transcript.history
        self.session_usage = usage_of(self.history.items)
        self.model_usage = usage_by_model(self.history.items)
        self.session_spent_usd = budget.spent_of(self, self.history.items)
        if start_paused:  # the paused turn's spending so far counts against its budget
            turn = self.history.turn
            this_turn = [i for i in self.history.items if i.turn == turn]
            self.turn_usage = usage_of(this_turn)
            self.turn_spent_usd = budget.spent_of(self, this_turn)
        self.elicitations = Elicitations(emit=self.emit)
        self.compactor = Compactor(
            config=config, context=context, provider=provider, fs=fs, commit=self.commit
        )
        self.task = PodTask(self._report)
        self.board = StatusBoard(self)
        self.machine = PodLifecycle(
            model=self,
            start_value=start_state(start_paused),
            listeners=[self.board, self.state_clock],
        )
        self.board.start()
        if jobs is not None:
            jobs.on_change = self.board.jobs_changed
        if tools.policy is not None:
            self.modes = ModeSwitch(
                tools.policy, on_change=lambda change: modes.mode_changed(self, change)
            )
            tools.modes = self.modes
        if self.opening.prompt is not None:
            # A command's allowed-tools hold until its turn ends, a restart included.
            grant_command(self, self.opening.prompt.command, say=False)

    def _report(self, event: str, result: str | None) -> None:
        """Tell the machine how the task ended; it decides what that means."""
        if result is None:
            self.machine.send(event)
        else:
            self.machine.send(event, result=result)

    # -- a turn ------------------------------------------------------------------------------

    def stash_file_refs(
        self, segments: list[Segment], client_request_id: str | None = None
    ) -> None:
        """Resolve the submit's refs now; failures become alerts and placeholders.
        ``client_request_id``: the ``run``'s, kept on its user message."""
        self.submission = resolve_prompt(self, segments, client_request_id)

    def start_turn(self) -> None:
        """Begin a turn: notes, the user message and its refs, then the turn task."""
        try:
            turn = self.history.new_turn()
            self.turn_is_open = True
            self.turn_usage = TokenUsage()
            model_choice.apply_pending(self)  # a set_model that waited for a turn boundary
            self.turn_spent_usd = 0.0
            self.budget_stop = None
            self.emit("turn_start", TurnStartData(turn=turn))
            conversation.inject_queued_notes(self)
            submission, self.submission = self.submission, None
            cancelled = decide_prompt(self, submission, turn) if submission is not None else None
            turn_task.launch(self, cancelled=cancelled)
        except Exception as exc:
            # The machine is already in running: a turn task must exist to lead it out again.
            log.exception("starting the turn failed")
            turn_task.launch(
                self, failure=f"internal error starting the turn: {type(exc).__name__}: {exc}"
            )

    def resume_turn(self) -> None:
        """Run the paused turn again from where its history stands."""
        self.emit("turn_start", TurnStartData(turn=self.history.turn, resumed=True))
        # The turn checks its budget again before anything is sent: a resume without a
        # raise pauses again at once, with the same alert.
        self.budget_stop = None
        items = self.history.items
        # Notes wait for the next round boundary when calls are pending, or when the turn
        # paused inside a server loop (pause_turn): its continuation must go out as it is.
        if not pending_tool_calls(items) and not awaits_continuation(items):
            conversation.inject_queued_notes(self)
        turn_task.launch(self)

    def interrupt_turn(self) -> None:
        """Cancel the turn task; its wrapper reports the outcome to the machine."""
        if self.elicitations.waiting():
            # A request for input waits in a task of the MCP server's, not the turn's: said
            # over before the turn can end (a shutdown would close every connection first),
            # and after this transition's status (scheduled ahead of the task's cancellation).
            asyncio.get_running_loop().call_soon(self.elicitations.withdraw_all)
        self.task.interrupt()

    def close_orphans(self) -> None:
        """Answer unanswered tool calls with synthetic ``[Interrupted by user]`` results, and
        close server calls left open with an ``unavailable`` error result (core/server_loop)."""
        for result in close_orphans(self.transcript.view()):
            if self.subpods is not None and isinstance(result, ToolResult):
                result = self.subpods.closing(result)  # says what the call's child had done
            self.commit(result)

    def inject_interrupt_note(self) -> None:
        """Tell the model its previous turn was interrupted."""
        self.commit(interrupt_note())

    def end_turn(self, result: str) -> None:
        """Close the current turn for good: persist and announce ``turn_end``."""
        left, self.opening = self.opening, TurnOpening()
        self.phase = None
        if left.preread:
            paths = ", ".join(f"@{ref.label}" for ref in left.preread)
            self.alert("warn", "file_ref", f"the turn ended before {paths} could be read")
        if left.prompt is not None:
            # A command still expanding holds markers in its text: the line typed says it.
            command = left.prompt.command
            deciding = command is not None and command.model is not None and not command.decided
            why, said = (
                ("its command was expanded", flatten_segments(left.prompt.segments))
                if left.prompt.steps or deciding
                else ("its UserPromptSubmit hooks passed the prompt", left.prompt.message().text)
            )
            self.alert(
                "warn",
                "prompt_submit",
                f"the turn ended before {why}; it was not sent: " + _clip(said),
            )
            self.transcript.record(HeldPromptRecord(phase="done", turn=self.history.turn))
        self.transcript.end_turn(self.history.turn, result)
        self.turn_is_open = False
        self.approvals.policy.end_turn()  # a skill's allowed-tools last to the turn's end
        self.budget_stop = None
        self.emit("turn_end", TurnEndData(turn=self.history.turn, result=result))  # type: ignore[arg-type]
        if self.upward is not None and turn_told_upward(result):
            self.upward("turn_ended", result)

    def end_run(self, result: str) -> None:
        """Tell clients how the run they started ended."""
        stopped = is_stopped(self.machine.configuration_values)
        if self.jobs is not None and run_leaves_work_going(result) and not stopped:
            # Jobs belong to the pod, not the turn: say that they go on (before run_end, which
            # is where a client like `pod run` stops listening).
            alert = self.jobs.still_running(result)
            if alert is not None:
                self.alert("info", "jobs", alert)
        reason = "budget" if result == "paused" and self.budget_stop is not None else None
        self.emit("run_end", RunEndData(result=result, pause_reason=reason))  # type: ignore[arg-type]
        if run_failed(result) and self.upward is not None:
            self.upward("errored", "the turn failed")

    def turn_open(self) -> bool:
        """Whether the last turn is still open (paused), so a compaction returns to paused."""
        return self.turn_is_open

    # -- notes -------------------------------------------------------------------------------

    def queue_note(self, note: SystemMessage) -> None:
        """Keep a notify / pod_event note for the next round boundary."""
        self.notes.add(note)

    def inject_queued_notes(self) -> None:
        """Commit queued notes as system messages."""
        conversation.inject_queued_notes(self)

    def has_queued_notes(self) -> bool:
        """Whether notes wait for a turn."""
        return bool(self.notes)

    # -- compaction and rewind ---------------------------------------------------------------

    def request_compaction(self, focus: str | None = None) -> None:
        """Compact at the next chance: now between turns, or at the next round boundary."""
        self.compaction_request = CompactionRequest(trigger="manual", focus=focus)

    def compaction_requested(self) -> bool:
        """Whether a ``compact`` waits (asked mid-turn; the turn ended before a round boundary)."""
        return self.compaction_request is not None

    def start_compaction(self) -> None:
        """Launch a compaction between turns; the machine waits in ``compacting``."""
        compaction.start_compaction(self)

    def request_rewind(self, to: int | None = None, restore: RewindRestore = "both") -> None:
        """Remember where the rewind goes (checked already by the ``rewind`` method)."""
        self.rewind_request = (to, restore)

    def start_rewind(self) -> None:
        """Launch the rewind; the machine waits in ``rewinding`` until it is done."""
        rewind.start_rewind(self)

    # -- people's answers --------------------------------------------------------------------

    def approve_call(self, call_id: str, scope: str = "once", mode: str | None = None) -> None:
        """Let a waiting tool call run (``session``: and calls like it from now on; ``mode``:
        for a plan, the mode to work in, checked by the ``approve`` method)."""
        self.approvals.answer(
            call_id,
            Answer(
                allow=True,
                scope="session" if scope == "session" else "once",
                mode=parse_mode(mode) if mode is not None else None,
            ),
        )

    def deny_call(self, call_id: str, message: str = "", asked: bool = True) -> None:
        """Refuse a waiting tool call; the model reads the message (``asked`` False: no
        person was asked, a client refused on nobody's behalf)."""
        self.approvals.answer(call_id, Answer(allow=False, message=message, asked=asked))

    def answer_input(
        self, input_id: str, action: str = "decline", content: dict[str, Any] | None = None
    ) -> None:
        """Answer a waiting request for input; its MCP server gets it."""
        answer: Action = (
            "accept" if action == "accept" else "cancel" if action == "cancel" else "decline"
        )
        self.elicitations.answer(input_id, answer, content)

    def input_waiting(self) -> bool:
        """Whether a request for input waits for a person (beside a waiting approval)."""
        return self.elicitations.waiting()

    # -- the end -----------------------------------------------------------------------------

    def on_enter_stopped(self) -> None:
        """The pod stopped: keep undelivered notes, say goodbye, let the process end."""
        if self.notes or (self.jobs is not None and self.jobs.reports_pending):
            # Notes that never reached a turn are kept in the session, not dropped.
            conversation.inject_queued_notes(self)
        if self.upward is not None:
            self.upward("shut_down", "")
        self.emit("shutdown", {})
        if self.on_stopped is not None:
            self.on_stopped()


__all__ = ["Controller"]
