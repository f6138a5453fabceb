"""Conformance cases: one per transition-table row, derived from the row's fields alone.

:func:`build_cases` reads :func:`states.table.transition_table` and turns every row into a
:class:`Case`: how the kit brings a pod into the row's source state (:class:`Setup`), and
what it must observe once the row's method is sent (:class:`Expectation`). Nothing here
repeats the table; the few facts the kit needs about states are read from the rows too:

* a **rest** state takes no turn outcome (``idle``, ``paused``, ``stopped``);
* a **round** state moves on a round marker (``requesting``, ``executing_tools``); the kit
  holds the pod there with a slow streamed reply or a slow tool call from its fake API;
* a **winding** state is neither (``pausing``, ``cancelling``, ``stopping``): the turn task
  was told to stop. Where it settles is the target of its ``turn_interrupted`` row.

Rows for turn outcomes and round markers cannot be sent by a client; their cases are skipped
with a reason naming the method rows that pass through them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any, Literal

from states.lifecycle import METHOD_EVENTS, OUTCOME_EVENTS, ROUND_EVENTS
from states.table import TransitionRow, transition_table

__all__ = [
    "Case",
    "Expectation",
    "Setup",
    "StateFacts",
    "build_cases",
]

Hold = Literal[
    "nothing",
    "slow_stream",
    "slow_tool",
    "call_for_approval",
    "call_for_input",
    "slow_summary",
    "slow_compaction",
    "past_compact_at",
]
"""What the kit itself does to hold the pod before the row: nothing, a slow stream, a slow
tool, a call waiting for approval, a call whose tool waits for the person's input, a slow
summary request inside a turn, a slow one between turns, or a fresh pod with a small window
about to pass its ``compact_at``. These name the kit's stimuli, not states: which state each
one holds the pod in is the table's to say (:class:`StateFacts`)."""

Decision = Literal["approved", "denied", "withdrawn"]

InputOutcome = Literal["accept", "withdrawn"]
"""How a request for input ends in a row: the kit's answer (it always accepts, filling in the
form), or withdrawn by whatever else ends the wait."""

ReplyKind = Literal["error", "none", "any"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Setup:
    """How the kit drives a pod into a row's source state."""

    hold: Hold
    """The stimulus the kit applies (see :data:`Hold`)."""
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
            "nothing": "idle",
            "slow_stream": "slow stream",
            "slow_tool": "slow tool",
            "call_for_approval": "call awaiting approval",
            "call_for_input": "call awaiting input",
            "slow_summary": "approve → slow summary in the turn",
            "slow_compaction": "compact → slow summary",
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


@dataclass(frozen=True)
class StateFacts:
    """What the table says about states, computed once from its rows."""

    rows: Sequence[TransitionRow]

    @cached_property
    def by_key(self) -> dict[tuple[str, str], TransitionRow]:
        """Rows by ``(state, event)``."""
        return {(row.state, row.event): row for row in self.rows}

    @cached_property
    def states(self) -> tuple[str, ...]:
        """The table's states, in order."""
        return tuple(dict.fromkeys(row.state for row in self.rows))

    def row(self, state: str, event: str) -> TransitionRow:
        """One row."""
        return self.by_key[(state, event)]

    def is_rest(self, state: str) -> bool:
        """No turn outcome is accepted: no turn task can be alive here."""
        return not any(self.row(state, e).allowed for e in OUTCOME_EVENTS)

    def is_round(self, state: str) -> bool:
        """A round marker moves the pod elsewhere: a turn is streaming or running tools."""
        return any(
            self.row(state, e).allowed and self.row(state, e).target != state for e in ROUND_EVENTS
        )

    def is_compacting(self, state: str) -> bool:
        """A compaction between turns runs: it ends with a compaction outcome, not a turn's."""
        return (
            self.row(state, "compaction_done").allowed
            and not self.row(state, "turn_finished").allowed
        )

    def is_rewinding(self, state: str) -> bool:
        """A rewind runs: it ends with a rewind outcome, not a turn's."""
        return (
            self.row(state, "rewind_done").allowed and not self.row(state, "turn_finished").allowed
        )

    def is_winding(self, state: str) -> bool:
        """The turn task was told to stop and the pod waits for it to end."""
        return not (
            self.is_rest(state)
            or self.is_round(state)
            or self.is_compacting(state)
            or self.is_rewinding(state)
        )

    def settles_to(self, winding: str) -> str:
        """Where a winding state lands when the interrupted turn task ends."""
        return self.row(winding, "turn_interrupted").target

    def finishes_to(self, state: str) -> str:
        """Where a round state lands when its turn ends normally."""
        return self.row(state, "turn_finished").target

    def method_into(self, target: str, sources: Sequence[str]) -> tuple[str, str] | None:
        """The first ``(source, method)`` among ``sources`` whose row leads to ``target``."""
        for source in sources:
            for event in METHOD_EVENTS:
                row = self.by_key.get((source, event))
                if row is not None and row.allowed and row.target == target:
                    return source, event
        return None

    def continues(self, state: str) -> bool:
        """Whether a turn left in ``state`` can be continued there (it takes ``resume``)."""
        row = self.by_key.get((state, "resume"))
        return row is not None and row.allowed

    def interrupt_for_settle(self, round_state: str) -> tuple[str, str]:
        """The method that winds a round state down to ``paused``-like rest (``pause``).

        Prefers a winding state that settles where the turn can be continued (a rest state
        that takes ``resume``, when the table has one), so that the kit's own
        interruption does not end the turn it is about to inspect.
        """
        options: list[tuple[str, str, str]] = []
        for event in METHOD_EVENTS:
            row = self.row(round_state, event)
            if row.allowed and self.is_winding(row.target):
                options.append((event, row.target, self.settles_to(row.target)))
        if not options:
            raise ValueError(f"no method winds {round_state!r} down")
        resumable = [o for o in options if self.continues(o[2])]
        event, _, settle = (resumable or options)[0]
        return event, settle

    @cached_property
    def initial(self) -> str:
        """The state a fresh pod starts in: the first rest state of the table."""
        return next(s for s in self.states if self.is_rest(s))

    @cached_property
    def stream_state(self) -> str:
        """The round state a new turn enters first (a pod streaming its first response)."""
        found = self.method_into_round(self.initial)
        if found is None:
            raise ValueError("no method starts a turn")
        return found

    def method_into_round(self, source: str) -> str | None:
        """The round state ``run`` (or any method) leads to from ``source``."""
        for event in METHOD_EVENTS:
            row = self.row(source, event)
            if row.allowed and self.is_round(row.target):
                return row.target
        return None

    @cached_property
    def tools_state(self) -> str:
        """The round state the stream state moves to on ``tools_started``."""
        return self.row(self.stream_state, "tools_started").target

    @cached_property
    def approval_state(self) -> str:
        """Where a call of the tools state waits for a person (``approval_needed``)."""
        return self.row(self.tools_state, "approval_needed").target

    @cached_property
    def input_state(self) -> str | None:
        """Where a call of the tools state waits for a person's input (``input_needed``), if
        the table has such a state."""
        row = self.by_key.get((self.tools_state, "input_needed"))
        return row.target if row is not None and row.allowed and row.target != row.state else None

    @cached_property
    def summary_state(self) -> str:
        """Where a turn compacts between rounds (``compaction_started`` from the stream)."""
        return self.row(self.stream_state, "compaction_started").target

    def answers(self, row: TransitionRow) -> bool:
        """The row answers what the waiting call waits for (approve / deny, or the input it
        asked for), so the turn goes on by itself."""
        return row.allowed and any(
            a in row.actions for a in ("approve_call", "deny_call", "answer_input")
        )

    def task_end_event(self, source: str) -> str:
        """The outcome an interrupted task sends: a compaction's, or a turn's."""
        return "compaction_failed" if self.is_compacting(source) else "turn_interrupted"

    def interrupt_compaction(self, state: str) -> str:
        """The method that stops a compaction between turns and stays put (``pause``)."""
        for event in METHOD_EVENTS:
            row = self.row(state, event)
            if row.allowed and row.target == state and "interrupt_turn" in row.actions:
                return event
        raise ValueError(f"no method interrupts {state!r}")


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
        return Setup(hold="nothing")
    if state == stream:
        return Setup(hold="slow_stream")
    if state == tools:
        return Setup(hold="slow_tool")
    if state == facts.approval_state:
        return Setup(hold="call_for_approval")
    if state == facts.input_state:
        return Setup(hold="call_for_input")
    if state == facts.summary_state:
        return Setup(hold="slow_summary")
    if facts.is_compacting(state):
        return Setup(hold="slow_compaction")
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
        return Setup(hold="nothing", method=found[1], pipelined=True)
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
    return "slow_stream" if source == stream else "slow_tool"


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
        same_request_again="resume_turn" in actions and setup.hold == "slow_stream",
        quiet=facts.is_rest(state) and not row.actions and target == state,
        input_refused=not row.allowed and row.event in text_methods,
        approval=approval,
        elicitation=elicitation,
        compaction_forbidden=compacting_source or state == facts.summary_state,
    )


def _round_marker_use(facts: StateFacts, row: TransitionRow) -> str:
    """Which kit holds make the pod take a round marker that moves it."""
    tools, approval, summary = facts.tools_state, facts.approval_state, facts.summary_state
    waiting = facts.input_state
    edge = (row.state, row.target)
    if edge == (facts.stream_state, tools):
        return (
            f"the pod takes it before every `{tools}`, `{approval}` and `{waiting}` row "
            "(slow tool, call)"
        )
    if edge == (tools, approval):
        return f"the pod takes it before every `{approval}` row (the kit's call needing approval)"
    if edge == (approval, tools):
        return f"the pod takes it when `{approval}` × approve / deny lets the call go on"
    if edge == (tools, waiting):
        return f"the pod takes it before every `{waiting}` row (the kit's call asking for input)"
    if edge == (waiting, tools):
        return f"the pod takes it when `{waiting}` × answer_elicitation lets the call go on"
    if edge == (tools, facts.stream_state):
        return (
            f"the pod takes it after an answered call ran (`{approval}` × approve / deny, "
            f"`{waiting}` × answer_elicitation)"
        )
    if edge == (facts.stream_state, summary):
        return f"the pod takes it before every `{summary}` row (compact, then approve)"
    if edge == (summary, facts.stream_state):
        return (
            f"observed in {facts.stream_state}-compaction_started: the compaction a request "
            "past compact_at needs commits, and the turn goes on"
        )
    return (
        f"not driven: it needs a call waiting for approval and another for input at once, "
        f"and the kit's calls wait one at a time ({edge[0]} → {edge[1]})"
    )


def _passing_rows(facts: StateFacts, row: TransitionRow) -> str:
    """Which method rows make the pod take this runtime-sent row, for the skip reason."""
    if row.kind == "round":
        if row.allowed and row.target != row.state:
            return _round_marker_use(facts, row)
        return "a client cannot send it"
    if not row.allowed:
        return "a client cannot send it"
    into = [
        (state, event, r)
        for (state, event), r in facts.by_key.items()
        if r.kind == "method" and r.allowed and r.target == row.state
    ]
    # What interrupts a task there (settled by this row), and what starts one there.
    stops = [f"{s}-{e}" for s, e, r in into if "interrupt_turn" in r.actions]
    if row.event == "compaction_failed" and not facts.is_compacting(row.state):
        stops = [f"{s}-{e}" for s, e, _ in into if facts.is_compacting(s)]
    starts = [f"{s}-{e}" for s, e, _ in into if s != row.state]
    if row.event in ("turn_interrupted", "compaction_failed") and stops:
        return "observed as the settle of " + ", ".join(stops[:4])
    if row.event == "compaction_done" and facts.is_compacting(row.state) and starts:
        return "observed when the compaction of " + ", ".join(starts[:2]) + " completes"
    if row.state in (facts.stream_state, facts.tools_state) and row.event == "turn_finished":
        return "observed when the kit's fast replies end a turn (e.g. idle-run)"
    if row.state == facts.approval_state and row.event == "turn_finished":
        return (
            f"not driven: a turn cannot finish while its call waits ({row.state} × approve "
            "lets it run first)"
        )
    if row.state == facts.input_state and row.event == "turn_finished":
        return (
            f"not driven: a turn cannot finish while its call waits ({row.state} × "
            "answer_elicitation lets it run first)"
        )
    return "a client cannot send it"


REWIND = "rewind"
REWIND_SKIP = (
    "a rewind names a user message of the pod's own history (a seq the kit cannot know in "
    "advance) and is over in a moment; tests/e2e/test_rewind_e2e.py drives these rows against "
    "the runtime"
)


def _rewind_states(table: Sequence[TransitionRow]) -> set[str]:
    """The states a ``rewind`` leads to (the kit does not hold a pod there)."""
    return {row.target for row in table if row.event == REWIND and row.allowed} - {
        row.state for row in table if row.event == REWIND and row.allowed
    }


def build_cases(rows: Sequence[TransitionRow] | None = None) -> list[Case]:
    """One case per row of the transition table, in table order."""
    table = list(rows) if rows is not None else transition_table()
    facts = StateFacts(table)
    cases: list[Case] = []
    for row in table:
        if REWIND in (row.event, row.state) or row.state in _rewind_states(table):
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
            reason = f"{family}, sent by the pod's runtime; {_passing_rows(facts, row)}"
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
            setup = Setup(hold="slow_compaction", start="paused")
            if row.event == REWIND:
                cases.append(Case(row=row, setup=setup, expect=None, skip_reason=REWIND_SKIP))
                continue
            cases.append(Case(row=row, setup=setup, expect=_expect(open_facts, row, setup)))
    return cases
