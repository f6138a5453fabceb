"""The pod lifecycle as one statechart.

The class below is the single source of truth for what a pod may do in each state. Protocol
methods and worker outcomes are its events; anything it does not declare is rejected with
``TransitionNotAllowed``, which the runtime maps to a protocol error through
:data:`REJECTION_CODES`. The transition actions name methods of the domain model (see
:class:`LifecycleModel`); the runtime implements them with pure history functions.

Reading guide::

    idle ──run/notify/pod_event──▶ running{requesting ⇄ executing_tools}
    running ──pause──▶ pausing ──turn_*──▶ paused ──resume──▶ running
    running{requesting ⇄ summarizing}                          (a turn compacts between rounds)
    running{executing_tools ⇄ awaiting_approval}               (a call waits for a person)
    running{executing_tools ⇄ awaiting_input}                  (an MCP server asks a person)
    idle/paused ──compact──▶ compacting ──compaction_*──▶ idle/paused
    idle/paused ──rewind──▶ rewinding ──rewind_*──▶ idle        (a paused turn is closed first)
    paused ──run──▶ interrupted ──(at once)──▶ running      (orphans closed, note injected)
    running ──cancel──▶ cancelling ──turn_*──▶ idle           (orphans closed)
    idle ──(notes queued)──▶ running                            (notes start a turn)
    any ──shutdown──▶ stopping/stopped                         (orphans closed)
"""

from __future__ import annotations

from typing import Any, Final, Literal, Protocol

from statemachine import State, StateMachine

from states.vocabulary import METHOD_EVENTS, OUTCOME_EVENTS, REJECTION_CODES, ROUND_EVENTS

__all__ = [
    "METHOD_EVENTS",
    "OUTCOME_EVENTS",
    "PUBLIC_STATUS",
    "REJECTION_CODES",
    "ROUND_EVENTS",
    "LifecycleModel",
    "PodLifecycle",
    "PublicStatus",
    "leaf_state",
    "public_status",
]

PublicStatus = Literal["idle", "running", "paused", "stopped"]

PUBLIC_STATUS: Final[dict[str, PublicStatus]] = {
    "idle": "idle",
    "running": "running",
    "requesting": "running",
    "executing_tools": "running",
    "summarizing": "running",
    "awaiting_approval": "running",
    "awaiting_input": "running",
    "compacting": "running",
    "rewinding": "running",
    "pausing": "running",
    "cancelling": "running",
    "stopping": "running",
    "interrupted": "running",
    "paused": "paused",
    "stopped": "stopped",
}
"""Maps every machine state to the coarse status clients see in the ``status`` event."""


class LifecycleModel(Protocol):
    """What the machine's actions call; the runtime's controller implements it."""

    def stash_file_refs(self, segments: Any) -> None:
        """Resolve a submit's ``file_ref`` segments now, to land right after the user message."""

    def start_turn(self) -> None:
        """Commit the pending user input (and stash) and launch a new turn task."""

    def resume_turn(self) -> None:
        """Launch the turn task again on the paused history."""

    def interrupt_turn(self) -> None:
        """Ask the running turn task to stop (asyncio cancellation); returns at once."""

    def close_orphans(self) -> None:
        """Answer each unanswered ``tool_use`` with a synthetic ``[Interrupted by user]`` result."""

    def inject_interrupt_note(self) -> None:
        """Append the system note telling the model the previous turn was interrupted."""

    def queue_note(self, note: Any) -> None:
        """Keep a notify / pod_event note until the next round boundary."""

    def inject_queued_notes(self) -> None:
        """Append all queued notes to history as system messages."""

    def has_queued_notes(self) -> bool:
        """Whether notes wait for a turn (an idle pod then starts one at once)."""

    def request_compaction(self, focus: str | None = None) -> None:
        """Remember that the history should be compacted (with optional focus instructions)."""

    def start_compaction(self) -> None:
        """Launch a compaction task between turns."""

    def turn_open(self) -> bool:
        """Whether the last turn is still open (paused), so a compaction returns to paused."""

    def compaction_requested(self) -> bool:
        """Whether a ``compact`` is waiting (asked mid-turn, and the turn ended first)."""

    def request_rewind(self, to: int = 0, restore: str = "both") -> None:
        """Remember where a ``rewind`` goes (a user message's seq) and what it restores."""

    def start_rewind(self) -> None:
        """Launch the rewind task: files restored and the rewind recorded, all or nothing."""

    def approve_call(self, call_id: str, scope: str = "once") -> None:
        """Let a waiting tool call run (``session``: and calls like it from now on)."""

    def deny_call(self, call_id: str, message: str = "", asked: bool = True) -> None:
        """Refuse a waiting tool call; the model reads the message (``asked`` False: no
        person was asked, a client refused on nobody's behalf)."""

    def answer_input(
        self, input_id: str, action: str = "decline", content: dict[str, Any] | None = None
    ) -> None:
        """Answer a waiting request for input (accept with the form's content, decline, or
        cancel); the MCP server that asked gets it."""

    def input_waiting(self) -> bool:
        """Whether a request for input waits for a person (beside a waiting approval)."""

    def end_turn(self, result: str) -> None:
        """Close the current turn for good with this result (``turn_end``)."""

    def end_run(self, result: str) -> None:
        """Tell clients the run they started is over, and how (``run_end``)."""

    def on_enter_stopped(self) -> None:
        """The pod has stopped: deliver what is left and let the process end."""


CLOSE_AS_REPORTED: Final = ["close_orphans", "end_turn_as_reported"]
CLOSE_CANCELLED: Final = ["close_orphans", "end_turn_cancelled"]


class PodLifecycle(StateMachine):
    """Idle, Running, Paused, Interrupted→Run and Stopped, with the history surgery on edges.

    The machine alone decides what an outcome means: each edge names how it closes the turn
    (``end_turn_*``) and how it ends the client's run (``end_run_*``), so the runtime only
    reports how its turn task ended and never compares state names.
    """

    # An exception in a history action must reach the controller, not become an
    # ``error.execution`` event that leaves the machine in a state nobody checked.
    catch_errors_as_events = False

    idle = State("Idle", initial=True)

    class running(State.Compound):
        """A turn task is alive; where it is tells what an interrupt leaves behind."""

        # Streaming a response: an interrupt here commits nothing of the partial stream.
        requesting = State("Requesting", initial=True)
        # The assistant message is committed; its tool calls run. An interrupt commits a
        # truthful result for each started tool and leaves never-started calls orphaned.
        executing_tools = State("Executing tools")

        # Between rounds the turn may compact its history (a summary request); an interrupt
        # here commits nothing: the compaction is one item, written whole or not at all.
        summarizing = State("Summarizing")
        # A call of the round waits for a person's approval (others may run meanwhile);
        # an interrupt withdraws the request, and the call never started.
        awaiting_approval = State("Awaiting approval")
        # An MCP server, during a call of one of its tools, asks a person for input (a form or
        # a URL to open). An approval waiting at the same time wins the state: its answer is
        # what the round needs first, and the request for input is still answerable there.
        awaiting_input = State("Awaiting input")

        tools_started = requesting.to(executing_tools)
        approval_needed = executing_tools.to(awaiting_approval) | awaiting_input.to(
            awaiting_approval
        )
        approval_settled = awaiting_approval.to(
            awaiting_input, cond="input_waiting"
        ) | awaiting_approval.to(executing_tools)
        approve = awaiting_approval.to.itself(internal=True, on="approve_call")
        deny = awaiting_approval.to.itself(internal=True, on="deny_call")
        input_needed = executing_tools.to(awaiting_input) | awaiting_approval.to.itself(
            internal=True
        )
        input_settled = awaiting_input.to(executing_tools) | awaiting_approval.to.itself(
            internal=True
        )
        answer_elicitation = awaiting_input.to.itself(
            internal=True, on="answer_input"
        ) | awaiting_approval.to.itself(internal=True, cond="input_waiting", on="answer_input")
        round_done = executing_tools.to(requesting, on="inject_queued_notes")
        compaction_started = requesting.to(summarizing)
        compaction_committed = summarizing.to(requesting)
        requesting.to.itself(internal=True, event="notify pod_event", on="queue_note")
        executing_tools.to.itself(internal=True, event="notify pod_event", on="queue_note")
        summarizing.to.itself(internal=True, event="notify pod_event", on="queue_note")
        awaiting_approval.to.itself(internal=True, event="notify pod_event", on="queue_note")
        awaiting_input.to.itself(internal=True, event="notify pod_event", on="queue_note")
        # A compact asked for mid-turn happens at the turn's next round boundary.
        requesting.to.itself(internal=True, event="compact", on="request_compaction")
        executing_tools.to.itself(internal=True, event="compact", on="request_compaction")
        awaiting_approval.to.itself(internal=True, event="compact", on="request_compaction")
        awaiting_input.to.itself(internal=True, event="compact", on="request_compaction")
        summarizing.to.itself(internal=True, event="compact")
        # A budget changed mid-turn applies at the turn's next check (docs/budgets.md).
        requesting.to.itself(internal=True, event="set_budget")
        executing_tools.to.itself(internal=True, event="set_budget")
        summarizing.to.itself(internal=True, event="set_budget")
        awaiting_approval.to.itself(internal=True, event="set_budget")
        awaiting_input.to.itself(internal=True, event="set_budget")

    pausing = State("Pausing")
    cancelling = State("Cancelling")
    stopping = State("Stopping")
    paused = State("Paused")
    interrupted = State("Interrupted")
    # Compacting between turns (``compact`` while idle or paused); it returns where it came
    # from, and an interrupt leaves the history exactly as it was.
    compacting = State("Compacting")
    # Rewinding between turns: the workspace and/or the conversation back to just before a
    # prompt. All or nothing, and over in a moment, so no interrupt stops it half-way;
    # shutdown waits for it.
    rewinding = State("Rewinding")
    stopped = State("Stopped", final=True)

    # A round event that races an interrupt is dropped: the turn is already winding down.
    _ROUNDS = (
        "tools_started round_done compaction_started compaction_committed "
        "approval_needed approval_settled input_needed input_settled"
    )
    pausing.to.itself(internal=True, event=_ROUNDS)
    cancelling.to.itself(internal=True, event=_ROUNDS)
    stopping.to.itself(internal=True, event=_ROUNDS)

    # -- methods ---------------------------------------------------------------------------
    # Turns start in ``after`` actions: the new state is entered first, so clients learn the
    # status before the turn's first events.
    run = idle.to(running, before="stash_file_refs", after="start_turn") | paused.to(
        interrupted,
        before="stash_file_refs",
        # The paused turn is over: answer its orphans, close it, then tell the model why.
        on=["close_orphans", "end_turn_cancelled", "inject_interrupt_note"],
    )
    interrupted.to(running, after="start_turn")

    # notify and pod_event are one event under two names: a note for the model.
    idle.to(running, event="notify pod_event", on="queue_note", after="start_turn")
    paused.to.itself(internal=True, event="notify pod_event", on="queue_note")
    pausing.to.itself(internal=True, event="notify pod_event", on="queue_note")
    cancelling.to.itself(internal=True, event="notify pod_event", on="queue_note")
    compacting.to.itself(internal=True, event="notify pod_event", on="queue_note")
    rewinding.to.itself(internal=True, event="notify pod_event", on="queue_note")
    # A compaction asked for during a turn that then ended happens now, before anything else;
    # notes that arrived after the last round boundary then start the next turn on their own.
    idle.to(compacting, cond="compaction_requested", after="start_compaction")
    paused.to(compacting, cond="compaction_requested", after="start_compaction")
    idle.to(running, cond="has_queued_notes", after="start_turn")

    resume = paused.to(running, after="resume_turn")

    # New caps apply wherever the pod works or waits (the runtime applies them once the
    # machine takes the event; inside ``running`` each leaf takes it, so the turn stays
    # where it is); a stopping or stopped pod spends nothing more.
    set_budget = (
        idle.to.itself(internal=True)
        | paused.to.itself(internal=True)
        | pausing.to.itself(internal=True)
        | cancelling.to.itself(internal=True)
        | compacting.to.itself(internal=True)
        | rewinding.to.itself(internal=True)
    )

    compact = (
        idle.to(compacting, on="request_compaction", after="start_compaction")
        | paused.to(compacting, on="request_compaction", after="start_compaction")
        | compacting.to.itself(internal=True)
    )

    rewind = idle.to(rewinding, on="request_rewind", after="start_rewind") | paused.to(
        rewinding,
        # The paused turn is over, as a cancel would end it: orphans answered, turn closed.
        on=["request_rewind", "close_orphans", "end_turn_cancelled"],
        after="start_rewind",
    )

    pause = (
        running.to(pausing, on="interrupt_turn")
        | pausing.to.itself(internal=True)
        | paused.to.itself(internal=True)
        | cancelling.to.itself(internal=True)
        | stopping.to.itself(internal=True)
        # Stopping a compaction between turns leaves the pod where it was.
        | compacting.to.itself(internal=True, on="interrupt_turn")
    )

    cancel = (
        running.to(cancelling, on="interrupt_turn")
        | pausing.to(cancelling)
        | cancelling.to.itself(internal=True)
        | stopping.to.itself(internal=True)
        | compacting.to.itself(internal=True, on="interrupt_turn")
    )

    shutdown = (
        running.to(stopping, on="interrupt_turn")
        | pausing.to(stopping)
        | cancelling.to(stopping)
        | stopping.to.itself(internal=True)
        | idle.to(stopped)
        | paused.to(stopped, on=["close_orphans", "end_turn_cancelled"])
        | compacting.to(stopping, on="interrupt_turn")
        | rewinding.to(stopping)
    )

    # -- worker outcomes -------------------------------------------------------------------
    # ``as_reported``: the turn task's own result (finished, limit_reached, errored). A turn
    # that was being cancelled or stopped ends ``cancelled`` whatever the task reported.
    turn_finished = (
        running.to(idle, on=CLOSE_AS_REPORTED, after="end_run_as_reported")
        | pausing.to(idle, on=CLOSE_AS_REPORTED, after="end_run_as_reported")
        | cancelling.to(idle, on=CLOSE_CANCELLED, after="end_run_cancelled")
        | stopping.to(stopped, on=CLOSE_CANCELLED, after="end_run_cancelled")
    )
    turn_paused = (
        running.to(paused, after="end_run_paused")
        | pausing.to(paused, after="end_run_paused")
        | cancelling.to(idle, on=CLOSE_CANCELLED, after="end_run_cancelled")
        | stopping.to(stopped, on=CLOSE_CANCELLED, after="end_run_cancelled")
    )
    turn_interrupted = (
        # Nobody asked for this interruption (e.g. the event loop is closing): treat it as a
        # cancel, so the turn still ends with a wire-valid history.
        running.to(idle, on=CLOSE_CANCELLED, after="end_run_cancelled")
        | pausing.to(paused, after="end_run_paused")
        | cancelling.to(idle, on=CLOSE_CANCELLED, after="end_run_cancelled")
        | stopping.to(stopped, on=CLOSE_CANCELLED, after="end_run_cancelled")
    )
    turn_failed = (
        running.to(idle, on=CLOSE_AS_REPORTED, after="end_run_as_reported")
        | pausing.to(idle, on=CLOSE_AS_REPORTED, after="end_run_as_reported")
        | cancelling.to(idle, on=CLOSE_CANCELLED, after="end_run_cancelled")
        | stopping.to(stopped, on=CLOSE_CANCELLED, after="end_run_cancelled")
    )
    # A compaction between turns ends where it began: with the paused turn still open, or
    # idle. Either way it ends no turn and no run (there is none), and shutdown wins.
    compaction_done = (
        compacting.to(paused, cond="turn_open")
        | compacting.to(idle)
        | stopping.to(stopped, cond="turn_open", on=CLOSE_CANCELLED)
        | stopping.to(stopped)
    )
    compaction_failed = (
        compacting.to(paused, cond="turn_open")
        | compacting.to(idle)
        | stopping.to(stopped, cond="turn_open", on=CLOSE_CANCELLED)
        | stopping.to(stopped)
    )

    # A rewind ends in idle (its turn, if one was paused, was closed when it began); shutdown
    # asked meanwhile waited for it.
    rewind_done = rewinding.to(idle) | stopping.to(stopped)
    rewind_failed = rewinding.to(idle) | stopping.to(stopped)

    # -- how an edge ends the turn and the run (results are the machine's to decide) ----------

    def end_turn_as_reported(self, result: str = "finished") -> None:
        """Close the turn with the result the turn task reported."""
        self.model.end_turn(result)

    def end_turn_cancelled(self) -> None:
        """Close the turn as cancelled."""
        self.model.end_turn("cancelled")

    def end_run_as_reported(self, result: str = "finished") -> None:
        """End the client's run with the turn task's result."""
        self.model.end_run(result)

    def end_run_paused(self) -> None:
        """End the client's run: the turn is paused and can be resumed."""
        self.model.end_run("paused")

    def end_run_cancelled(self) -> None:
        """End the client's run: the turn was cancelled."""
        self.model.end_run("cancelled")


def public_status(active_state_ids: set[str] | frozenset[str]) -> PublicStatus:
    """The coarse status for a machine configuration (the set of active state ids)."""
    for state_id in ("stopped", "paused", "idle"):
        if state_id in active_state_ids:
            return PUBLIC_STATUS[state_id]
    return PUBLIC_STATUS["running"]


def leaf_state(active_state_ids: set[str] | frozenset[str]) -> str:
    """The innermost active state id, the precise place the pod is in."""
    for state_id in (
        "requesting",
        "executing_tools",
        "summarizing",
        "awaiting_approval",
        "awaiting_input",
    ):
        if state_id in active_state_ids:
            return state_id
    return next(iter(active_state_ids))
