"""The lifecycle machine: its table against a hand-written one, the seed's rules, properties.

Only ``states`` is imported here; the history simulation that drives the machine with the
runtime's real history functions lives in ``tests/orchestrator/core/test_lifecycle_history.py``.
"""

from __future__ import annotations

import inspect
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from statemachine.exceptions import TransitionNotAllowed

from states.lifecycle import (
    METHOD_EVENTS,
    OUTCOME_EVENTS,
    PUBLIC_STATUS,
    REJECTION_CODES,
    ROUND_EVENTS,
    LifecycleModel,
    PodLifecycle,
    leaf_state,
    public_status,
)
from states.table import (
    ALL_EVENTS,
    EVENT_ARGUMENTS,
    TABLE_STATES,
    RecordingModel,
    TransitionRow,
    transition_table,
)

# -- the hand-written table ------------------------------------------------------------------

NOT_RUNNING = "not_running"
NOT_AWAITING = "not_awaiting_approval"
NO_INPUT = "not_awaiting_input"
NOT_PAUSED = "not_paused"
ALREADY_RUNNING = "already_running"


def ok(target: str, *actions: str) -> tuple[str, tuple[str, ...], None]:
    """An accepted method: where it leads and the actions it calls."""
    return (target, actions, None)


def err(state: str, code: str) -> tuple[str, tuple[str, ...], str]:
    """A rejected method: the state is kept and the code is reported."""
    return (state, (), code)


def _running_leaf(leaf: str) -> dict[str, tuple[str, tuple[str, ...], str | None]]:
    return {
        "run": err(leaf, ALREADY_RUNNING),
        "notify": ok(leaf, "queue_note"),
        "pod_event": ok(leaf, "queue_note"),
        "resume": err(leaf, NOT_PAUSED),
        "pause": ok("pausing", "interrupt_turn"),
        "cancel": ok("cancelling", "interrupt_turn"),
        "shutdown": ok("stopping", "interrupt_turn"),
        # Mid-turn, compaction waits for the next round boundary; already summarizing: no-op.
        "compact": ok(leaf) if leaf == "summarizing" else ok(leaf, "request_compaction"),
        # Answers are taken only while a call waits for one.
        "approve": ok(leaf, "approve_call")
        if leaf == "awaiting_approval"
        else err(leaf, NOT_AWAITING),
        "deny": ok(leaf, "deny_call") if leaf == "awaiting_approval" else err(leaf, NOT_AWAITING),
        # An answer for input is taken while a request for input waits (see the guard test
        # for one beside an approval).
        "answer_elicitation": ok(leaf, "answer_input")
        if leaf == "awaiting_input"
        else err(leaf, NO_INPUT),
        "rewind": err(leaf, ALREADY_RUNNING),
        "set_budget": ok(leaf),
    }


EXPECTED_METHODS: dict[str, dict[str, tuple[str, tuple[str, ...], str | None]]] = {
    "idle": {
        "run": ok("requesting", "stash_file_refs", "start_turn"),
        "notify": ok("requesting", "queue_note", "start_turn"),
        "pod_event": ok("requesting", "queue_note", "start_turn"),
        "resume": err("idle", NOT_PAUSED),
        "pause": err("idle", NOT_RUNNING),
        "cancel": err("idle", NOT_RUNNING),
        "shutdown": ok("stopped", "stop"),
        "compact": ok("compacting", "request_compaction", "start_compaction"),
        "approve": err("idle", NOT_AWAITING),
        "deny": err("idle", NOT_AWAITING),
        "answer_elicitation": err("idle", NO_INPUT),
        "rewind": ok("rewinding", "request_rewind", "start_rewind"),
        "set_budget": ok("idle"),
    },
    "requesting": _running_leaf("requesting"),
    "executing_tools": _running_leaf("executing_tools"),
    "summarizing": _running_leaf("summarizing"),
    "awaiting_approval": _running_leaf("awaiting_approval"),
    "awaiting_input": _running_leaf("awaiting_input"),
    "compacting": {
        "run": err("compacting", ALREADY_RUNNING),
        "notify": ok("compacting", "queue_note"),
        "pod_event": ok("compacting", "queue_note"),
        "resume": err("compacting", NOT_PAUSED),
        # Stopping a compaction between turns leaves the history as it was, and the pod
        # where it was when the compaction ends.
        "pause": ok("compacting", "interrupt_turn"),
        "cancel": ok("compacting", "interrupt_turn"),
        "shutdown": ok("stopping", "interrupt_turn"),
        "compact": ok("compacting"),
        "approve": err("compacting", NOT_AWAITING),
        "deny": err("compacting", NOT_AWAITING),
        "answer_elicitation": err("compacting", NO_INPUT),
        "rewind": err("compacting", ALREADY_RUNNING),
        "set_budget": ok("compacting"),
    },
    "rewinding": {
        "run": err("rewinding", ALREADY_RUNNING),
        "notify": ok("rewinding", "queue_note"),
        "pod_event": ok("rewinding", "queue_note"),
        "resume": err("rewinding", NOT_PAUSED),
        # All or nothing: a rewind is not stopped half-way; shutdown waits for it.
        "pause": err("rewinding", NOT_RUNNING),
        "cancel": err("rewinding", NOT_RUNNING),
        "shutdown": ok("stopping"),
        "compact": err("rewinding", ALREADY_RUNNING),
        "approve": err("rewinding", NOT_AWAITING),
        "deny": err("rewinding", NOT_AWAITING),
        "answer_elicitation": err("rewinding", NO_INPUT),
        "rewind": err("rewinding", ALREADY_RUNNING),
        "set_budget": ok("rewinding"),
    },
    "pausing": {
        "run": err("pausing", ALREADY_RUNNING),
        "notify": ok("pausing", "queue_note"),
        "pod_event": ok("pausing", "queue_note"),
        "resume": err("pausing", NOT_PAUSED),
        "pause": ok("pausing"),
        # The turn task was already asked to stop; cancel only changes where it lands.
        "cancel": ok("cancelling"),
        "shutdown": ok("stopping"),
        "compact": err("pausing", ALREADY_RUNNING),
        "approve": err("pausing", NOT_AWAITING),
        "deny": err("pausing", NOT_AWAITING),
        "answer_elicitation": err("pausing", NO_INPUT),
        "rewind": err("pausing", ALREADY_RUNNING),
        "set_budget": ok("pausing"),
    },
    "cancelling": {
        "run": err("cancelling", ALREADY_RUNNING),
        "notify": ok("cancelling", "queue_note"),
        "pod_event": ok("cancelling", "queue_note"),
        "resume": err("cancelling", NOT_PAUSED),
        "pause": ok("cancelling"),
        "cancel": ok("cancelling"),
        "shutdown": ok("stopping"),
        "compact": err("cancelling", ALREADY_RUNNING),
        "approve": err("cancelling", NOT_AWAITING),
        "deny": err("cancelling", NOT_AWAITING),
        "answer_elicitation": err("cancelling", NO_INPUT),
        "rewind": err("cancelling", ALREADY_RUNNING),
        "set_budget": ok("cancelling"),
    },
    "stopping": {
        "run": err("stopping", ALREADY_RUNNING),
        "notify": err("stopping", NOT_RUNNING),
        "pod_event": err("stopping", NOT_RUNNING),
        "resume": err("stopping", NOT_PAUSED),
        "pause": ok("stopping"),
        "cancel": ok("stopping"),
        "shutdown": ok("stopping"),
        "compact": err("stopping", ALREADY_RUNNING),
        "approve": err("stopping", NOT_AWAITING),
        "deny": err("stopping", NOT_AWAITING),
        "answer_elicitation": err("stopping", NO_INPUT),
        "rewind": err("stopping", ALREADY_RUNNING),
        # A stopping or stopped pod spends nothing more: no budget to set.
        "set_budget": err("stopping", NOT_RUNNING),
    },
    "paused": {
        "run": ok(
            "requesting",
            "stash_file_refs",
            "close_orphans",
            "end_turn",
            "inject_interrupt_note",
            "start_turn",
        ),
        "notify": ok("paused", "queue_note"),
        "pod_event": ok("paused", "queue_note"),
        "resume": ok("requesting", "resume_turn"),
        "pause": ok("paused"),
        "cancel": err("paused", NOT_RUNNING),
        "shutdown": ok("stopped", "close_orphans", "end_turn", "stop"),
        "compact": ok("compacting", "request_compaction", "start_compaction"),
        "approve": err("paused", NOT_AWAITING),
        "deny": err("paused", NOT_AWAITING),
        "answer_elicitation": err("paused", NO_INPUT),
        "rewind": ok("rewinding", "request_rewind", "close_orphans", "end_turn", "start_rewind"),
        "set_budget": ok("paused"),
    },
    "stopped": {
        "run": err("stopped", ALREADY_RUNNING),
        "notify": err("stopped", NOT_RUNNING),
        "pod_event": err("stopped", NOT_RUNNING),
        "resume": err("stopped", NOT_PAUSED),
        "pause": err("stopped", NOT_RUNNING),
        "cancel": err("stopped", NOT_RUNNING),
        # A final state takes no events; a second shutdown is told the pod is not running.
        "shutdown": err("stopped", NOT_RUNNING),
        "compact": err("stopped", ALREADY_RUNNING),
        "approve": err("stopped", NOT_AWAITING),
        "deny": err("stopped", NOT_AWAITING),
        "answer_elicitation": err("stopped", NO_INPUT),
        "rewind": err("stopped", ALREADY_RUNNING),
        # A stopping or stopped pod spends nothing more: no budget to set.
        "set_budget": err("stopped", NOT_RUNNING),
    },
}

END = ("close_orphans", "end_turn", "end_run")
PAUSED = ("end_run",)
STOP = ("close_orphans", "end_turn", "stop", "end_run")
TURN_OUTCOMES = ("turn_finished", "turn_paused", "turn_failed", "turn_interrupted")
COMPACTION_OUTCOMES = ("compaction_done", "compaction_failed")
REWIND_OUTCOMES = ("rewind_done", "rewind_failed")
NONE: dict[str, tuple[str, tuple[str, ...]] | None] = dict.fromkeys(
    COMPACTION_OUTCOMES + REWIND_OUTCOMES
)
EXPECTED_OUTCOMES: dict[str, dict[str, tuple[str, tuple[str, ...]] | None]] = {
    "requesting": {
        "turn_finished": ("idle", END),
        "turn_paused": ("paused", PAUSED),
        "turn_failed": ("idle", END),
        # An interruption nobody asked for is handled like a cancel.
        "turn_interrupted": ("idle", END),
        **NONE,
    },
    "pausing": {
        "turn_finished": ("idle", END),
        "turn_paused": ("paused", PAUSED),
        "turn_failed": ("idle", END),
        "turn_interrupted": ("paused", PAUSED),
        **NONE,
    },
    "cancelling": {**{event: ("idle", END) for event in TURN_OUTCOMES}, **NONE},
    "stopping": {
        **{event: ("stopped", STOP) for event in TURN_OUTCOMES},
        # Shutdown during a compaction or a rewind between turns: no turn to close when
        # none was open.
        **{event: ("stopped", ("stop",)) for event in COMPACTION_OUTCOMES + REWIND_OUTCOMES},
    },
    "compacting": {
        **dict.fromkeys(TURN_OUTCOMES + REWIND_OUTCOMES),
        # Where it returns depends on whether a paused turn was open (see the guard test).
        **{event: ("idle", ()) for event in COMPACTION_OUTCOMES},
    },
    "rewinding": {
        **dict.fromkeys(TURN_OUTCOMES + COMPACTION_OUTCOMES),
        # A paused turn was closed when the rewind began: it always ends in idle.
        **{event: ("idle", ()) for event in REWIND_OUTCOMES},
    },
}
EXPECTED_OUTCOMES["executing_tools"] = EXPECTED_OUTCOMES["requesting"]
EXPECTED_OUTCOMES["summarizing"] = EXPECTED_OUTCOMES["requesting"]
EXPECTED_OUTCOMES["awaiting_approval"] = EXPECTED_OUTCOMES["requesting"]
EXPECTED_OUTCOMES["awaiting_input"] = EXPECTED_OUTCOMES["requesting"]
for _resting in ("idle", "paused", "stopped"):
    EXPECTED_OUTCOMES[_resting] = dict.fromkeys(OUTCOME_EVENTS)

# (turn_end, run_end) of each outcome: the machine, not the runtime, decides them.
FINISHED, ERRORED, CANCELLED = ("finished",) * 2, ("errored",) * 2, ("cancelled",) * 2
EXPECTED_RESULTS: dict[str, dict[str, tuple[str | None, str | None]]] = {
    "requesting": {
        "turn_finished": FINISHED,
        "turn_paused": (None, "paused"),
        "turn_failed": ERRORED,
        "turn_interrupted": CANCELLED,
        **dict.fromkeys(COMPACTION_OUTCOMES + REWIND_OUTCOMES, (None, None)),
    },
    "pausing": {
        # The turn ended before the pause took: it ends as it ended.
        "turn_finished": FINISHED,
        "turn_paused": (None, "paused"),
        "turn_failed": ERRORED,
        "turn_interrupted": (None, "paused"),
        **dict.fromkeys(COMPACTION_OUTCOMES + REWIND_OUTCOMES, (None, None)),
    },
    "cancelling": {
        **dict.fromkeys(TURN_OUTCOMES, CANCELLED),
        **dict.fromkeys(COMPACTION_OUTCOMES + REWIND_OUTCOMES, (None, None)),
    },
    "stopping": {
        **dict.fromkeys(TURN_OUTCOMES, CANCELLED),
        **dict.fromkeys(COMPACTION_OUTCOMES + REWIND_OUTCOMES, (None, None)),
    },
    # A compaction or a rewind between turns ends no turn and no run.
    "compacting": dict.fromkeys(OUTCOME_EVENTS, (None, None)),
    "rewinding": dict.fromkeys(OUTCOME_EVENTS, (None, None)),
}
EXPECTED_RESULTS["executing_tools"] = EXPECTED_RESULTS["requesting"]
EXPECTED_RESULTS["summarizing"] = EXPECTED_RESULTS["requesting"]
EXPECTED_RESULTS["awaiting_approval"] = EXPECTED_RESULTS["requesting"]
EXPECTED_RESULTS["awaiting_input"] = EXPECTED_RESULTS["requesting"]


@pytest.fixture(scope="module")
def table() -> dict[tuple[str, str], TransitionRow]:
    return {(row.state, row.event): row for row in transition_table()}


def test_table_covers_every_state_and_event(table: dict[tuple[str, str], TransitionRow]) -> None:
    assert set(table) == {(s, e) for s in TABLE_STATES for e in ALL_EVENTS}
    assert set(EXPECTED_METHODS) == set(TABLE_STATES)
    assert all(set(row) == set(METHOD_EVENTS) for row in EXPECTED_METHODS.values())


@pytest.mark.parametrize("state", TABLE_STATES)
def test_methods_match_hand_written_table(
    state: str, table: dict[tuple[str, str], TransitionRow]
) -> None:
    actual = {
        event: (table[state, event].target, table[state, event].actions, table[state, event].error)
        for event in METHOD_EVENTS
    }
    assert actual == EXPECTED_METHODS[state]


@pytest.mark.parametrize("state", TABLE_STATES)
def test_outcomes_match_hand_written_table(
    state: str, table: dict[tuple[str, str], TransitionRow]
) -> None:
    actual = {
        event: (table[state, event].target, table[state, event].actions)
        if table[state, event].allowed
        else None
        for event in OUTCOME_EVENTS
    }
    assert actual == EXPECTED_OUTCOMES[state]


@pytest.mark.parametrize("state", list(EXPECTED_RESULTS))
def test_the_machine_decides_turn_end_and_run_end(
    state: str, table: dict[tuple[str, str], TransitionRow]
) -> None:
    actual = {
        event: (table[state, event].turn_end, table[state, event].run_end)
        for event in OUTCOME_EVENTS
    }
    assert actual == EXPECTED_RESULTS[state]


def test_closing_a_paused_turn_ends_it_cancelled_without_a_run_end(
    table: dict[tuple[str, str], TransitionRow],
) -> None:
    for event in ("run", "shutdown"):
        row = table["paused", event]
        assert (row.turn_end, row.run_end) == ("cancelled", None)
    # Methods never end a run themselves: only the turn task's outcome does.
    assert all(r.run_end is None for r in table.values() if r.kind == "method")


@pytest.mark.parametrize("event", ["compaction_done", "compaction_failed"])
@pytest.mark.parametrize(("turn_is_open", "back_to"), [(True, "paused"), (False, "idle")])
def test_a_compaction_between_turns_returns_where_it_began(
    event: str, turn_is_open: bool, back_to: str
) -> None:
    start = "paused" if turn_is_open else "idle"
    model = RecordingModel(turn_is_open=turn_is_open)
    machine = PodLifecycle(model=model, start_value=start)
    machine.send("compact")
    assert leaf(machine) == "compacting"
    machine.send("pause")  # stops the compaction task; the pod stays until it reports
    assert leaf(machine) == "compacting"
    machine.send(event)
    assert leaf(machine) == back_to
    assert model.actions == ["request_compaction", "start_compaction", "interrupt_turn"]
    assert (model.turn_end, model.run_end) == (None, None)


def test_shutdown_during_a_paused_turns_compaction_closes_the_turn() -> None:
    model = RecordingModel(turn_is_open=True)
    machine = PodLifecycle(model=model, start_value="paused")
    machine.send("compact")
    machine.send("shutdown")
    machine.send("compaction_failed")
    assert machine.is_terminated
    assert model.actions[-3:] == ["close_orphans", "end_turn", "stop"]
    assert model.turn_end == "cancelled"


def test_queued_notes_start_a_turn_from_idle_on_their_own() -> None:
    machine = PodLifecycle(model=RecordingModel(notes_queued=True), start_value="executing_tools")
    model: RecordingModel = machine.model
    machine.send("turn_finished", result="finished")
    # The run ends, then the eventless idle → running edge starts the next turn.
    assert model.actions == ["close_orphans", "end_turn", "end_run", "start_turn"]
    assert leaf(machine) == "requesting"


def test_round_events_only_move_inside_running(table: dict[tuple[str, str], TransitionRow]) -> None:
    allowed = {(r.state, r.event): (r.target, r.actions) for r in table.values() if r.allowed}
    rounds = {key: value for key, value in allowed.items() if key[1] in ROUND_EVENTS}
    winding_down = {
        (state, event): (state, ())
        for state in ("pausing", "cancelling", "stopping")
        for event in ROUND_EVENTS
    }
    # Inside running they move between substates; while winding down they are dropped.
    assert rounds == {
        ("requesting", "tools_started"): ("executing_tools", ()),
        ("executing_tools", "round_done"): ("requesting", ("inject_queued_notes",)),
        ("requesting", "compaction_started"): ("summarizing", ()),
        ("summarizing", "compaction_committed"): ("requesting", ()),
        ("executing_tools", "approval_needed"): ("awaiting_approval", ()),
        ("awaiting_approval", "approval_settled"): ("executing_tools", ()),
        ("executing_tools", "input_needed"): ("awaiting_input", ()),
        ("awaiting_input", "input_settled"): ("executing_tools", ()),
        # An approval waiting beside a request for input holds the state.
        ("awaiting_input", "approval_needed"): ("awaiting_approval", ()),
        ("awaiting_approval", "input_needed"): ("awaiting_approval", ()),
        ("awaiting_approval", "input_settled"): ("awaiting_approval", ()),
        **winding_down,
    }


def test_rejected_methods_carry_their_protocol_code(
    table: dict[tuple[str, str], TransitionRow],
) -> None:
    for row in table.values():
        if row.kind == "method" and not row.allowed:
            assert row.error == REJECTION_CODES.get(row.event)
        if row.kind != "method":
            assert row.error is None


# -- the seed's rules --------------------------------------------------------------------------


def machine_in(state: str) -> tuple[PodLifecycle, RecordingModel]:
    """A machine resting in ``state`` with a recording model."""
    model = RecordingModel()
    return PodLifecycle(model=model, start_value=state), model


def leaf(machine: PodLifecycle) -> str:
    """The machine's innermost active state."""
    return leaf_state(frozenset(str(v) for v in machine.configuration_values))


def send(machine: PodLifecycle, event: str) -> None:
    """Send an event with the arguments the runtime gives it."""
    machine.send(event, **EVENT_ARGUMENTS.get(event, {}))


def test_pause_when_idle_is_not_running() -> None:
    machine, model = machine_in("idle")
    with pytest.raises(TransitionNotAllowed):
        send(machine, "pause")
    assert (leaf(machine), model.actions, REJECTION_CODES["pause"]) == ("idle", [], "not_running")


def test_pause_when_paused_is_a_no_op() -> None:
    machine, model = machine_in("paused")
    send(machine, "pause")
    assert (leaf(machine), model.actions) == ("paused", [])


@pytest.mark.parametrize("state", ["idle", "paused"])
def test_cancel_when_not_running_is_not_running(state: str) -> None:
    machine, model = machine_in(state)
    with pytest.raises(TransitionNotAllowed):
        send(machine, "cancel")
    assert (leaf(machine), model.actions, REJECTION_CODES["cancel"]) == (state, [], "not_running")


@pytest.mark.parametrize("state", [s for s in TABLE_STATES if s != "paused"])
def test_resume_when_not_paused_is_not_paused(state: str) -> None:
    machine, _ = machine_in(state)
    with pytest.raises(TransitionNotAllowed):
        send(machine, "resume")
    assert REJECTION_CODES["resume"] == "not_paused"


@pytest.mark.parametrize("state", ["requesting", "executing_tools"])
def test_run_when_running_is_already_running(state: str) -> None:
    machine, model = machine_in(state)
    with pytest.raises(TransitionNotAllowed):
        send(machine, "run")
    assert (leaf(machine), model.actions, REJECTION_CODES["run"]) == (state, [], "already_running")


def test_run_when_paused_passes_interrupted_and_repairs_before_the_turn() -> None:
    machine, model = machine_in("paused")
    seen: list[str] = []
    machine.add_listener(_StateSpy(seen))
    send(machine, "run")
    assert leaf(machine) == "requesting"
    assert model.actions == [
        "stash_file_refs",
        "close_orphans",
        "end_turn",
        "inject_interrupt_note",
        "start_turn",
    ]
    assert seen == ["interrupted", "running", "requesting"]


class _StateSpy:
    """A listener recording every state entered."""

    def __init__(self, seen: list[str]) -> None:
        self.seen = seen

    def on_enter_state(self, target: Any) -> None:
        self.seen.append(target.id)


def test_resume_relaunches_the_turn() -> None:
    machine, model = machine_in("paused")
    send(machine, "resume")
    assert (leaf(machine), model.actions) == ("requesting", ["resume_turn"])


def test_cancel_mid_tool_closes_orphans_when_the_turn_ends() -> None:
    machine, model = machine_in("executing_tools")
    send(machine, "cancel")
    assert (leaf(machine), model.actions) == ("cancelling", ["interrupt_turn"])
    send(machine, "turn_interrupted")
    assert (leaf(machine), model.actions) == (
        "idle",
        ["interrupt_turn", "close_orphans", "end_turn", "end_run"],
    )
    assert (model.turn_end, model.run_end) == ("cancelled", "cancelled")


def test_pause_mid_tool_keeps_orphans_for_resume() -> None:
    machine, model = machine_in("executing_tools")
    send(machine, "pause")
    send(machine, "turn_interrupted")
    assert (leaf(machine), model.actions) == ("paused", ["interrupt_turn", "end_run"])
    assert (model.turn_end, model.run_end) == (None, "paused")


@pytest.mark.parametrize(
    ("state", "path"),
    [
        ("idle", [("shutdown", "stopped", ["stop"])]),
        (
            "requesting",
            [
                ("shutdown", "stopping", ["interrupt_turn"]),
                ("turn_interrupted", "stopped", ["interrupt_turn", *STOP]),
            ],
        ),
        (
            "executing_tools",
            [
                ("shutdown", "stopping", ["interrupt_turn"]),
                ("turn_finished", "stopped", ["interrupt_turn", *STOP]),
            ],
        ),
        (
            "pausing",
            [
                ("shutdown", "stopping", []),
                ("turn_interrupted", "stopped", list(STOP)),
            ],
        ),
        (
            "cancelling",
            [
                ("shutdown", "stopping", []),
                ("turn_failed", "stopped", list(STOP)),
            ],
        ),
        ("stopping", [("shutdown", "stopping", []), ("turn_paused", "stopped", STOP)]),
        ("paused", [("shutdown", "stopped", ["close_orphans", "end_turn", "stop"])]),
    ],
)
def test_shutdown_from_each_state_ends_stopped(
    state: str, path: list[tuple[str, str, list[str]]]
) -> None:
    machine, model = machine_in(state)
    for event, target, actions in path:
        send(machine, event)
        assert (leaf(machine), model.actions) == (target, list(actions))
    assert machine.is_terminated


def test_shutdown_when_stopped_is_refused() -> None:
    machine, _ = machine_in("stopped")
    with pytest.raises(TransitionNotAllowed):
        send(machine, "shutdown")


# -- the machine and its model -------------------------------------------------------------


def machine_callback_names() -> set[str]:
    """Every model method the machine names in its transitions and states."""
    names: set[str] = set()
    for state in PodLifecycle.states_map.values():  # includes the substates of ``running``
        groups: list[Any] = [state.enter, state.exit]
        for transition in state.transitions:
            groups += [transition.validators, transition.cond, transition.before]
            groups += [transition.on, transition.after]
        for group in groups:
            for spec in group:
                if not spec.is_convention and isinstance(spec.func, str):
                    names.add(spec.func)
    return names


def protocol_methods(cls: type) -> dict[str, inspect.Signature]:
    """Public methods of a class with their signatures."""
    return {
        name: inspect.signature(member)
        for name, member in vars(cls).items()
        if callable(member) and not name.startswith("_")
    }


def test_every_callback_the_machine_names_is_in_lifecycle_model() -> None:
    own = set(vars(PodLifecycle))
    named = machine_callback_names()
    model_named = named - own
    protocol = set(protocol_methods(LifecycleModel))
    assert model_named <= protocol
    # The rest are reached through the machine's own result adapters (end_turn_*,
    # end_run_*, which it names) or by convention (on_enter_stopped).
    assert {"end_turn_as_reported", "end_run_paused"} <= named & own
    assert protocol - model_named == {"end_turn", "end_run", "on_enter_stopped"}


def test_recording_model_matches_lifecycle_model_signatures() -> None:
    model_sigs = protocol_methods(LifecycleModel)
    recording_sigs = protocol_methods(RecordingModel)
    assert {n: str(s) for n, s in recording_sigs.items()} == {
        n: str(s) for n, s in model_sigs.items()
    }
    _: LifecycleModel = RecordingModel()


def test_public_status_covers_every_state() -> None:
    assert set(PUBLIC_STATUS) == {s.id for s in PodLifecycle.states_map.values()}
    assert set(PUBLIC_STATUS.values()) == {"idle", "running", "paused", "stopped"}


# -- property: random event sequences -------------------------------------------------------


@settings(max_examples=300)
@given(st.lists(st.sampled_from(ALL_EVENTS), max_size=40))
def test_random_events_stay_in_declared_states(events: list[str]) -> None:
    machine = PodLifecycle(model=RecordingModel())
    table = {(row.state, row.event): row for row in _TABLE}
    for event in events:
        before = leaf(machine)
        model: RecordingModel = machine.model
        model.actions.clear()
        try:
            send(machine, event)
            allowed = True
        except TransitionNotAllowed:
            allowed = False
        active = frozenset(str(v) for v in machine.configuration_values)
        assert leaf(machine) in TABLE_STATES
        assert public_status(active) in ("idle", "running", "paused", "stopped")
        assert public_status(active) == PUBLIC_STATUS[leaf(machine)]
        # A machine driven here by events behaves like one started here (as the table is).
        row = table[before, event]
        assert (allowed, leaf(machine), tuple(model.actions)) == (
            row.allowed,
            row.target,
            row.actions,
        )


_TABLE = transition_table()


class _InputWaiting(RecordingModel):
    """A model with a request for input waiting (beside an approval, in these tests)."""

    def input_waiting(self) -> bool:
        return True


def test_an_approval_beside_a_request_for_input_holds_the_state_and_hands_it_back() -> None:
    model = _InputWaiting()
    machine = PodLifecycle(model=model, start_value="executing_tools")
    machine.send("input_needed")
    assert leaf(machine) == "awaiting_input"
    machine.send("approval_needed")
    assert leaf(machine) == "awaiting_approval"
    # The request for input is still answerable while the approval holds the state.
    machine.send("answer_elicitation", input_id="input_1", action="accept", content={"a": 1})
    assert model.actions == ["answer_input"]
    machine.send("approval_settled")
    assert leaf(machine) == "awaiting_input"  # the request for input still waits
    machine.send("input_settled")
    assert leaf(machine) == "executing_tools"


def test_without_a_request_for_input_an_answer_for_one_is_refused_beside_an_approval() -> None:
    machine = PodLifecycle(model=RecordingModel(), start_value="awaiting_approval")
    with pytest.raises(TransitionNotAllowed):
        machine.send("answer_elicitation", input_id="input_1", action="decline", content=None)
    machine.send("approval_settled")
    assert leaf(machine) == "executing_tools"
