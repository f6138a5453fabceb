"""Conformance cases: one per transition-table row, derived from the row's fields alone.

:func:`build_cases` reads :func:`states.table.transition_table` and turns every row into a
:class:`Case`: how the kit brings a pod into the row's source state (:class:`Setup`), and
what it must observe once the row's method is sent (:class:`Expectation`). Nothing here
repeats the table; the few facts the kit needs about states are read from the rows too
(:class:`~conformance.state_facts.StateFacts`):

* a **rest** state takes no turn outcome (``idle``, ``paused``, ``stopped``);
* a **round** state moves on a round marker (``requesting``, ``executing_tools``); the kit
  holds the pod there with a slow streamed reply or a slow tool call from its fake API;
* a **winding** state is neither (``pausing``, ``cancelling``, ``stopping``): the turn task
  was told to stop. Where it settles is the target of its ``turn_interrupted`` row.

Rows for turn outcomes and round markers cannot be sent by a client; their cases are skipped
with a reason naming the method rows that pass through them (:mod:`conformance.skip_reasons`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from conformance.skip_reasons import REWIND, REWIND_SKIP, passing_rows, rewind_states
from conformance.state_facts import StateFacts
from states.lifecycle import METHOD_EVENTS
from states.table import TransitionRow, transition_table

__all__ = [
    "Case",
    "Expectation",
    "Setup",
    "build_cases",
]

Hold = Literal[
    "idle",
    "requesting",
    "executing_tools",
    "awaiting_approval",
    "awaiting_input",
    "summarizing",
    "compacting",
    "past_compact_at",
]
"""What the kit itself holds the pod in before the row: nothing, a slow stream, a slow tool,
a call waiting for approval, a call whose tool waits for the person's input, a slow summary
request (inside a turn, or between turns), or a fresh pod with a small window about to pass
its ``compact_at``."""

Decision = Literal["approved", "denied", "withdrawn"]

InputOutcome = Literal["accept", "withdrawn"]
"""How a request for input ends in a row: the kit's answer (it always accepts, filling in the
form), or withdrawn by whatever else ends the wait."""

ReplyKind = Literal["error", "none", "any"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Setup:
    """How the kit drives a pod into a row's source state."""

    hold: Hold
    """The stimulus: ``idle`` (nothing), ``requesting`` or ``executing_tools``."""
    method: str | None = None
    """A method sent after the stimulus to reach the source state (e.g. ``pause``)."""
    pipelined: bool = False
    """True when ``method`` goes out in the same write as the row's method: the source state
    is winding (or final) and cannot be waited for."""
    orphans_wanted: bool = False
    """The row closes orphans, so the kit pauses during tools to try to leave some."""
    start: Literal["idle", "paused"] = "idle"
    """Where a compaction between turns starts: idle, or with a paused turn open."""
    scope: Literal["once", "session"] = "once"
    """The scope of the row's ``approve``; ``session`` also allows the same call later."""

    def describe(self) -> str:
        """One line for reports: ``slow tool → pause (pipelined)``."""
        parts = {
            "idle": "idle",
            "requesting": "slow stream",
            "executing_tools": "slow tool",
            "awaiting_approval": "call awaiting approval",
            "awaiting_input": "call awaiting input",
            "summarizing": "approve → slow summary in the turn",
            "compacting": "compact → slow summary",
            "past_compact_at": "fresh pod, small window → a run past compact_at",
        }
        text = parts[self.hold]
        if self.start == "paused":
            text = "slow stream → pause → " + text
        if self.scope == "session":
            text += " (approve for the session)"
        if self.method is not None:
            text += f" → {self.method}" + (" (same write)" if self.pipelined else "")
        return text


@dataclass(frozen=True, slots=True, kw_only=True)
class Expectation:
    """What the kit checks after sending the row's method."""

    reply: ReplyKind
    """``error``: an ``error`` with ``error_code`` and the method's id; ``none``: no error;
    ``any``: the machine refuses the event but the protocol names no code."""
    error_code: str | None
    target: str
    """The leaf state the first changed ``status`` must report (``state`` when it stays)."""
    status_after: str
    """The public status that goes with ``target``."""
    changes_state: bool
    settle: str
    """The rest state the pod must reach once the turn (if any) winds down."""
    kit_interrupt: str | None
    """A method the kit sends to settle a pod the row left streaming or running a tool."""
    run_end: str | None
    """The ``result`` of the first ``run_end`` after the method, from the ``Ends`` column of
    the row that ends the turn task; None: no ``run_end`` expected (none is checked for only
    when ``turn_end_forbidden`` says so)."""
    turn_end: bool
    """A ``turn_end`` must come between the method and that ``run_end``."""
    turn_end_result: str | None
    """The ``result`` that ``turn_end`` must carry (the same ``Ends`` column), when known."""
    turn_end_forbidden: bool
    """No ``turn_end`` may come before that ``run_end`` (the turn stays open on pause)."""
    turn_start: Literal["new", "resumed"] | None
    user_message: bool
    """``start_turn`` for ``run``: a ``user_message`` with the kit's input."""
    note_delivered: bool
    """The method's note (``notify`` / ``pod_event``) must reach a later request."""
    close_orphans: bool
    interrupt_note: bool
    end_turn: bool
    same_request_again: bool
    """``resume`` of a turn paused mid-stream must send the interrupted request again."""
    quiet: bool
    """Nothing but the reply may happen before the sync ``get_status`` (a refusal or no-op
    in a rest state)."""
    input_refused: bool
    """A refused ``run`` / ``notify`` / ``pod_event``: its text must never reach history."""
    approval: Decision | None = None
    """How the call waiting for approval must be resolved (``approval_resolved``)."""
    elicitation: InputOutcome | None = None
    """How the request for input the kit's call made must end (``elicitation_resolved``)."""
    compaction_forbidden: bool = False
    """An interrupted compaction: no ``compaction`` may be committed before the pod rests."""
    compaction_trigger: str | None = None
    """A ``compaction`` with this ``trigger`` must be committed before the pod rests."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    """One row and what the kit does with it."""

    row: TransitionRow
    setup: Setup | None
    expect: Expectation | None
    skip_reason: str | None = None

    @property
    def id(self) -> str:
        """``<state>-<event>``, the test id (``…-from-paused`` for a compaction's variant)."""
        base = f"{self.row.state}-{self.row.event}"
        if self.setup is not None and self.setup.start == "paused":
            base += "-from-paused"
        if self.setup is not None and self.setup.scope == "session":
            base += "-session"
        return base

    @property
    def ends_pod(self) -> bool:
        """The pod is stopped afterwards, so it cannot be reused for the next row."""
        return self.expect is not None and self.expect.settle == "stopped"

    def report_fields(self) -> dict[str, Any]:
        """The columns of the report: id, state, event, the row's expectation in table words
        (``→ pausing``, ``error not_running``, ``no-op``) and how the kit set it up."""
        row = self.row
        if not row.allowed:
            expected = f"error {row.error}" if row.error else "not allowed"
        elif row.noop:
            expected = "no-op"
        elif row.target == row.state:
            expected = "stays"
        else:
            expected = f"→ {row.target}"
        return {
            "id": self.id,
            "state": row.state,
            "event": row.event,
            "expected": expected,
            "setup": self.setup.describe() if self.setup is not None else "—",
        }


def _setup(facts: StateFacts, row: TransitionRow) -> Setup:
    state = row.state
    stream, tools = facts.stream_state, facts.tools_state
    if state == facts.initial:
        return Setup(hold="idle")
    if state == stream:
        return Setup(hold="requesting")
    if state == tools:
        return Setup(hold="executing_tools")
    if state == facts.approval_state:
        return Setup(hold="awaiting_approval")
    if state == facts.input_state:
        return Setup(hold="awaiting_input")
    if state == facts.summary_state:
        return Setup(hold="summarizing")
    if facts.is_compacting(state):
        return Setup(hold="compacting")
    if facts.is_winding(state):
        # The slow tool gives the widest window: the pod must stop a process first.
        found = facts.method_into(state, [tools, stream])
        if found is None:
            raise ValueError(f"no method leads to {state!r}")
        source, method = found
        return Setup(hold=_hold(source, stream), method=method, pipelined=True)
    # A rest state: straight from idle if one method does it (the pod may then go away, so
    # the row's method follows in the same write), else by winding a turn down into it.
    found = facts.method_into(state, [facts.initial])
    if found is not None:
        return Setup(hold="idle", method=found[1], pipelined=True)
    orphans = "close_orphans" in row.actions
    sources = [tools, stream] if orphans else [stream, tools]
    for source in sources:
        for event in METHOD_EVENTS:
            step = facts.row(source, event)
            if (
                step.allowed
                and facts.is_winding(step.target)
                and facts.settles_to(step.target) == state
            ):
                return Setup(hold=_hold(source, stream), method=event, orphans_wanted=orphans)
    raise ValueError(f"the kit cannot reach {state!r}")


def _hold(source: str, stream: str) -> Hold:
    return "requesting" if source == stream else "executing_tools"


def _expect(facts: StateFacts, row: TransitionRow, setup: Setup) -> Expectation:
    state, target = row.state, row.target
    if row.allowed:
        reply: ReplyKind = "none"
    elif row.error is not None:
        reply = "error"
    else:
        reply = "any"

    # Which winding state the task passes through, and where the pod comes to rest. The
    # results the turn and the run end with are the ``Ends`` of the row that ends the task.
    kit_interrupt: str | None = None
    winding: str | None = None
    compacting_source = facts.is_compacting(state)
    ending: TransitionRow | None = None
    if facts.is_winding(target):
        winding = target
    elif facts.is_round(target) and (target != state or facts.answers(row)):
        # A new or resumed turn, or a call answered: the turn finishes on its own.
        ending = facts.row(target, "turn_finished")
    elif facts.is_round(state):
        kit_interrupt, _ = facts.interrupt_for_settle(state)
        winding = facts.row(state, kit_interrupt).target
    elif compacting_source:
        # A compaction between turns that the row did not stop: the kit stops it.
        if "interrupt_turn" not in row.actions:
            kit_interrupt = facts.interrupt_compaction(state)
        ending = facts.row(state, "compaction_failed")
    if winding is not None:
        ending = facts.row(winding, facts.task_end_event(state))
    if ending is not None:
        settle = ending.target
        run_end = ending.run_end
        turn_end = ending.turn_end is not None
        turn_end_result = ending.turn_end
        # A paused turn stays open through a stopped compaction (unless a note starts one).
        turn_end_forbidden = not turn_end and (
            winding is not None or (compacting_source and "queue_note" not in row.actions)
        )
    elif facts.is_compacting(target):
        # A compaction between turns comes back to where it started (the table's row is
        # drawn with no turn open; from ``paused`` the machine returns to ``paused``).
        settle = state
        run_end = None
        turn_end = False
        turn_end_result = None
        turn_end_forbidden = True
    else:
        settle = target
        run_end = None
        turn_end = False
        turn_end_result = None
        turn_end_forbidden = False

    approval: Decision | None = None
    if state == facts.approval_state:
        if "approve_call" in row.actions:
            approval = "approved"
        elif "deny_call" in row.actions:
            approval = "denied"
        else:
            approval = "withdrawn"  # the row or the kit interrupts the waiting turn
    elicitation: InputOutcome | None = None
    if state == facts.input_state:
        # Whatever does not answer the request ends the wait by interrupting the turn (the
        # row's own method, or the kit's settling pause).
        elicitation = "accept" if "answer_input" in row.actions else "withdrawn"

    actions = set(row.actions)
    turn_start: Literal["new", "resumed"] | None = None
    if "start_turn" in actions:
        turn_start = "new"
    elif "resume_turn" in actions:
        turn_start = "resumed"
    text_methods = ("run", "notify", "pod_event")
    return Expectation(
        reply=reply,
        error_code=row.error,
        target=target,
        status_after=row.status_after,
        changes_state=target != state,
        settle=settle,
        kit_interrupt=kit_interrupt,
        run_end=run_end,
        turn_end=turn_end or "end_turn" in actions,
        turn_end_result=row.turn_end or turn_end_result,
        turn_end_forbidden=turn_end_forbidden and "end_turn" not in actions,
        turn_start=turn_start,
        user_message="start_turn" in actions and row.event == "run",
        # A queued note, or a denial's message, is for the model: it must reach a request.
        note_delivered="queue_note" in actions or "deny_call" in actions,
        close_orphans="close_orphans" in actions,
        interrupt_note="inject_interrupt_note" in actions,
        end_turn="end_turn" in actions,
        same_request_again="resume_turn" in actions and setup.hold == "requesting",
        quiet=facts.is_rest(state) and not row.actions and target == state,
        input_refused=not row.allowed and row.event in text_methods,
        approval=approval,
        elicitation=elicitation,
        compaction_forbidden=compacting_source or state == facts.summary_state,
    )


def build_cases(rows: Sequence[TransitionRow] | None = None) -> list[Case]:
    """One case per row of the transition table, in table order."""
    table = list(rows) if rows is not None else transition_table()
    facts = StateFacts(table)
    cases: list[Case] = []
    for row in table:
        if REWIND in (row.event, row.state) or row.state in rewind_states(table):
            cases.append(Case(row=row, setup=None, expect=None, skip_reason=REWIND_SKIP))
            continue
        if (row.state, row.event) == (facts.stream_state, "compaction_started") and row.allowed:
            # The one round marker a client can cause: a request past ``compact_at``.
            setup = Setup(hold="past_compact_at")
            expect = replace(_expect(facts, row, setup), compaction_trigger="auto")
            cases.append(Case(row=row, setup=setup, expect=expect))
            continue
        if row.kind != "method":
            family = "turn outcome" if row.kind == "outcome" else "round marker"
            reason = f"{family}, sent by the pod's runtime; {passing_rows(facts, row)}"
            cases.append(Case(row=row, setup=None, expect=None, skip_reason=reason))
            continue
        setup = _setup(facts, row)
        cases.append(Case(row=row, setup=setup, expect=_expect(facts, row, setup)))
    cases += _from_paused(table, facts)
    for case in list(cases):
        if case.setup is not None and "approve_call" in case.row.actions:
            # The same row with ``scope: "session"``: a later call like it must not ask.
            setup = replace(case.setup, scope="session")
            cases.append(Case(row=case.row, setup=setup, expect=case.expect))
    return cases


def _from_paused(table: Sequence[TransitionRow], facts: StateFacts) -> list[Case]:
    """The compaction rows again, started from ``paused``: the table drawn with a turn open
    says where they settle (back in ``paused``, or ``stopped`` closing the turn)."""
    compacting = [s for s in facts.states if facts.is_compacting(s)]
    if not compacting:
        return []
    open_facts = StateFacts(
        transition_table(facts.states, dict.fromkeys(r.event for r in table), turn_open=True)
    )
    cases: list[Case] = []
    for row in open_facts.rows:
        if row.state in compacting and row.kind == "method":
            setup = Setup(hold="compacting", start="paused")
            if row.event == REWIND:
                cases.append(Case(row=row, setup=setup, expect=None, skip_reason=REWIND_SKIP))
                continue
            cases.append(Case(row=row, setup=setup, expect=_expect(open_facts, row, setup)))
    return cases
