"""The lifecycle machine: its table against a hand-written one, the seed's rules, properties.

The history simulation at the end drives the machine with a model built on the real history
functions and a simulated turn task, and checks after every step that the next request the pod
could send is one the Messages API accepts.
"""

from __future__ import annotations

import contextlib
import inspect
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from statemachine.exceptions import TransitionNotAllowed

from orchestrator.history import (
    INTERRUPT_NOTE,
    INTERRUPTED_SUMMARY,
    AssistantMessage,
    History,
    Item,
    SystemMessage,
    TextBlock,
    ThinkingBlock,
    ToolResult,
    ToolUseBlock,
    user_message,
)
from orchestrator.protocol import (
    FileRefSegment,
    ProtocolError,
    RunParams,
    Segment,
    TextSegment,
    parse_request,
)
from orchestrator.repair import close_orphans, interrupt_note, pending_tool_calls
from orchestrator.validator import validate_wire
from orchestrator.wire import WireBuilder, to_wire
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
    }


EXPECTED_METHODS: dict[str, dict[str, tuple[str, tuple[str, ...], str | None]]] = {
    "idle": {
        "run": ok("requesting", "stash_file_refs", "start_turn"),
        "notify": ok("requesting", "queue_note", "start_turn"),
        "pod_event": ok("requesting", "queue_note", "start_turn"),
        "resume": err("idle", NOT_PAUSED),
        "pause": err("idle", NOT_RUNNING),
        "cancel": err("idle", NOT_RUNNING),
        "shutdown": ok("stopped"),
    },
    "requesting": _running_leaf("requesting"),
    "executing_tools": _running_leaf("executing_tools"),
    "pausing": {
        "run": err("pausing", ALREADY_RUNNING),
        "notify": ok("pausing", "queue_note"),
        "pod_event": ok("pausing", "queue_note"),
        "resume": err("pausing", NOT_PAUSED),
        "pause": ok("pausing"),
        # The turn task was already asked to stop; cancel only changes where it lands.
        "cancel": ok("cancelling"),
        "shutdown": ok("stopping"),
    },
    "cancelling": {
        "run": err("cancelling", ALREADY_RUNNING),
        "notify": ok("cancelling", "queue_note"),
        "pod_event": ok("cancelling", "queue_note"),
        "resume": err("cancelling", NOT_PAUSED),
        "pause": ok("cancelling"),
        "cancel": ok("cancelling"),
        "shutdown": ok("stopping"),
    },
    "stopping": {
        "run": err("stopping", ALREADY_RUNNING),
        "notify": err("stopping", NOT_RUNNING),
        "pod_event": err("stopping", NOT_RUNNING),
        "resume": err("stopping", NOT_PAUSED),
        "pause": ok("stopping"),
        "cancel": ok("stopping"),
        "shutdown": ok("stopping"),
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
        "shutdown": ok("stopped", "close_orphans", "end_turn"),
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
    },
}

END = ("close_orphans", "end_turn")
EXPECTED_OUTCOMES: dict[str, dict[str, tuple[str, tuple[str, ...]] | None]] = {
    "requesting": {
        "turn_finished": ("idle", END),
        "turn_paused": ("paused", ()),
        "turn_failed": ("idle", END),
        # An interruption nobody asked for is handled like a cancel.
        "turn_interrupted": ("idle", END),
    },
    "pausing": {
        "turn_finished": ("idle", END),
        "turn_paused": ("paused", ()),
        "turn_failed": ("idle", END),
        "turn_interrupted": ("paused", ()),
    },
    "cancelling": {event: ("idle", END) for event in OUTCOME_EVENTS},
    "stopping": {event: ("stopped", END) for event in OUTCOME_EVENTS},
}
EXPECTED_OUTCOMES["executing_tools"] = EXPECTED_OUTCOMES["requesting"]
for _resting in ("idle", "paused", "stopped"):
    EXPECTED_OUTCOMES[_resting] = dict.fromkeys(OUTCOME_EVENTS)


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
        ["interrupt_turn", "close_orphans", "end_turn"],
    )


def test_pause_mid_tool_keeps_orphans_for_resume() -> None:
    machine, model = machine_in("executing_tools")
    send(machine, "pause")
    send(machine, "turn_interrupted")
    assert (leaf(machine), model.actions) == ("paused", ["interrupt_turn"])


@pytest.mark.parametrize(
    ("state", "path"),
    [
        ("idle", [("shutdown", "stopped", [])]),
        (
            "requesting",
            [
                ("shutdown", "stopping", ["interrupt_turn"]),
                ("turn_interrupted", "stopped", ["interrupt_turn", "close_orphans", "end_turn"]),
            ],
        ),
        (
            "executing_tools",
            [
                ("shutdown", "stopping", ["interrupt_turn"]),
                ("turn_finished", "stopped", ["interrupt_turn", "close_orphans", "end_turn"]),
            ],
        ),
        (
            "pausing",
            [
                ("shutdown", "stopping", []),
                ("turn_interrupted", "stopped", ["close_orphans", "end_turn"]),
            ],
        ),
        (
            "cancelling",
            [
                ("shutdown", "stopping", []),
                ("turn_failed", "stopped", ["close_orphans", "end_turn"]),
            ],
        ),
        ("stopping", [("shutdown", "stopping", []), ("turn_paused", "stopped", END)]),
        ("paused", [("shutdown", "stopped", ["close_orphans", "end_turn"])]),
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
    assert machine_callback_names() == set(protocol_methods(LifecycleModel))


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


# -- property: history simulation ------------------------------------------------------------


@dataclass
class TurnTask:
    """The simulated turn task: which part of a round it is in and whether it was told to stop."""

    phase: str = "request"
    interrupted: bool = False
    in_flight: str | None = None


class SimPod:
    """A LifecycleModel on the real history functions, plus a simulated turn task."""

    def __init__(self) -> None:
        self.history = History()
        self.pending: list[Segment] | None = None
        self.stash: list[Item] = []
        self.notes: list[str] = []
        self.task: TurnTask | None = None
        self.results: list[str] = []
        self.calls = 0
        self.machine = PodLifecycle(model=self)

    # -- LifecycleModel ----------------------------------------------------------------------

    def stash_file_refs(self, segments: Any) -> None:
        self.pending = list(segments)
        self.stash = [
            SystemMessage(text=f"<file {s.path}>\nbody\n</file>", origin="file_ref")
            for s in segments
            if isinstance(s, FileRefSegment)
        ]

    def start_turn(self) -> None:
        self.history.new_turn()
        if self.pending is not None:
            self.history.append(user_message(self.pending))
            self.history.extend(self.stash)
            self.pending, self.stash = None, []
        self.inject_queued_notes()
        self.task = TurnTask()

    def resume_turn(self) -> None:
        # Never-started calls are run first, as the Rust worker's resume did.
        pending = pending_tool_calls(self.history.items)
        self.task = TurnTask(phase="tools" if pending else "request")

    def interrupt_turn(self) -> None:
        assert self.task is not None
        self.task.interrupted = True

    def close_orphans(self) -> None:
        self.history.extend(list(close_orphans(self.history.items)))

    def inject_interrupt_note(self) -> None:
        self.history.append(interrupt_note())

    def queue_note(self, note: Any) -> None:
        self.notes.append(str(note))

    def inject_queued_notes(self) -> None:
        self.history.extend([SystemMessage(text=n, origin="note") for n in self.notes])
        self.notes = []

    def end_turn(self, result: str = "cancelled") -> None:
        self.results.append(result)

    # -- the simulated turn task -------------------------------------------------------------

    @property
    def leaf(self) -> str:
        return leaf(self.machine)

    def _end(self, outcome: str, result: str) -> None:
        self.task = None
        self.machine.send(outcome, result=result)

    def step(self, choice: int) -> None:
        """Let the turn task make one move; ``choice`` picks which."""
        task = self.task
        if task is None:
            return
        if task.phase == "request":
            self._step_request(task, choice)
        else:
            self._step_tools(task, choice)

    def _step_request(self, task: TurnTask, choice: int) -> None:
        if task.interrupted:
            self._end("turn_interrupted", "cancelled")  # the partial stream is dropped
            return
        if choice % 7 == 0:
            self._end("turn_failed", "errored")
            return
        calls = []
        for _ in range(choice // 7 % 4):
            self.calls += 1
            calls.append(ToolUseBlock(id=f"toolu_{self.calls}", name="Read", input={"n": 1}))
        blocks: list[Any] = []
        if choice % 2:
            blocks.append(ThinkingBlock(thinking="think", signature="sig"))
        blocks.append(TextBlock(text=" " if choice % 5 == 0 else "answer"))
        self.history.append(
            AssistantMessage(blocks=blocks + calls, stop_reason="tool_use" if calls else "end")
        )
        if not calls:
            self._end("turn_finished", "finished")
            return
        task.phase = "tools"
        self.machine.send("tools_started")

    def _step_tools(self, task: TurnTask, choice: int) -> None:
        if task.interrupted:
            if task.in_flight is not None:
                # A started tool gets a truthful result; never-started calls stay open.
                self.history.append(
                    ToolResult(call_id=task.in_flight, summary=INTERRUPTED_SUMMARY, is_error=True)
                )
            self._end("turn_interrupted", "cancelled")
            return
        if self.leaf == "requesting":  # resumed straight into tools
            self.machine.send("tools_started")
        pending = pending_tool_calls(self.history.items)
        if task.in_flight is None and choice % 5 == 0:
            self._end("turn_paused", "paused")  # an interceptor pauses before the next tool
            return
        if task.in_flight is None and choice % 5 == 1:
            task.in_flight = pending[0].id
            return
        self.history.append(
            ToolResult(
                call_id=pending[0].id,
                summary=f"Read {pending[0].id}",
                content=None if choice % 3 == 0 else "content",
                is_error=choice % 11 == 0,
            )
        )
        task.in_flight = None
        if not pending_tool_calls(self.history.items):
            task.phase = "request"
            self.machine.send("round_done")


PROBE = user_message([TextSegment(text="probe")])


def next_requests(pod: SimPod) -> list[list[Item]]:
    """The requests the pod may send next, each as the history it would be built from."""
    items = list(pod.history.items)
    answered = items + list(close_orphans(items))  # the shape of results still to come
    if pod.task is not None:
        return [answered if pod.task.phase == "tools" else items]
    if pod.leaf == "paused":
        # Resume runs what is pending and asks again; run closes, notes, then asks.
        return [answered, [*answered, interrupt_note(), PROBE]]
    assert pending_tool_calls(items) == [], "a resting pod keeps no unanswered tool call"
    return [[*items, PROBE]]


RUN_INPUTS = st.sampled_from(
    [
        '{"method":"run","params":{"input":"hello"}}',
        '{"method":"run","params":{"input":"  "}}',
        '{"method":"run","params":{"segments":[{"kind":"text","text":"see "},'
        '{"kind":"file_ref","path":"src/a.py"}]}}',
        '{"method":"run","params":{"segments":[{"kind":"future","x":1}]}}',
    ]
)
ACTIONS = st.one_of(
    st.tuples(st.just("run"), RUN_INPUTS),
    st.tuples(st.sampled_from(["notify", "pod_event"]), st.sampled_from(["note", " "])),
    st.tuples(st.sampled_from(["resume", "pause", "cancel", "shutdown"]), st.none()),
    st.tuples(st.just("step"), st.integers(min_value=0, max_value=10_000)),
    st.tuples(st.just("step"), st.integers(min_value=0, max_value=10_000)),
)


def _method_arguments(action: str, arg: Any) -> dict[str, Any] | None:
    """The event arguments a method line yields, or None when the line is refused."""
    if action == "run":
        try:
            _, params = parse_request(arg)
        except ProtocolError:
            return None
        assert isinstance(params, RunParams)
        return {"segments": params.segments}
    if action == "notify":
        line = f'{{"method":"notify","params":{{"message":"{arg}"}}}}'
        try:
            parse_request(line)
        except ProtocolError:
            return None
        return {"note": arg}
    if action == "pod_event":
        return {"note": f"[child pod turn_ended] {arg}"}
    return {}


@settings(max_examples=400, deadline=None)
@given(st.lists(ACTIONS, max_size=60))
def test_history_stays_wire_valid_through_any_interrupt(
    actions: list[tuple[str, Any]],
) -> None:
    pod = SimPod()
    builder = WireBuilder()
    for action, arg in actions:
        if pod.machine.is_terminated:
            break
        if action == "step":
            pod.step(arg)
        else:
            arguments = _method_arguments(action, arg)
            if arguments is not None:
                with contextlib.suppress(TransitionNotAllowed):
                    pod.machine.send(action, **arguments)
        assert pod.leaf in TABLE_STATES
        for request in next_requests(pod):
            wire = to_wire(request)
            assert validate_wire(wire) == [], (action, arg, request)
        assert builder.build(pod.history.items) == to_wire(pod.history.items)


def test_paused_run_appends_results_note_then_user_message() -> None:
    pod = SimPod()
    pod.machine.send("run", segments=[TextSegment(text="go")])
    pod.step(7 * 2 + 1)  # an assistant message with two tool calls
    pod.step(2)  # the first tool completes
    pod.step(1)  # the second tool starts
    pod.machine.send("pause")
    pod.step(0)  # the task stops: the started tool gets a truthful result
    assert pod.leaf == "paused"
    before = len(pod.history)
    pod.machine.send("run", segments=[TextSegment(text="something else")])
    added = [
        (type(i).__name__, getattr(i, "text", getattr(i, "summary", "")))
        for i in pod.history.items[before:]
    ]
    assert added == [
        ("SystemMessage", INTERRUPT_NOTE),
        ("UserMessage", "something else"),
    ]
    results = [i for i in pod.history.items if isinstance(i, ToolResult)]
    assert [(r.call_id, r.summary, r.synthetic) for r in results] == [
        ("toolu_1", "Read toolu_1", False),
        ("toolu_2", INTERRUPTED_SUMMARY, False),
    ]


def test_paused_run_closes_never_started_calls_with_synthetic_results() -> None:
    pod = SimPod()
    pod.machine.send("run", segments=[TextSegment(text="go")])
    pod.step(7 * 2 + 1)  # two tool calls, neither started
    pod.machine.send("pause")
    pod.step(2)
    before = len(pod.history)
    pod.machine.send("run", segments=[TextSegment(text="next")])
    added = pod.history.items[before:]
    assert [(type(i).__name__, i.turn) for i in added] == [
        ("ToolResult", 1),
        ("ToolResult", 1),
        ("SystemMessage", 1),
        ("UserMessage", 2),
    ]
    assert added[:2] == [
        ToolResult(
            seq=added[0].seq,
            turn=1,
            call_id="toolu_1",
            summary=INTERRUPTED_SUMMARY,
            content=None,
            synthetic=True,
        ),
        ToolResult(
            seq=added[1].seq,
            turn=1,
            call_id="toolu_2",
            summary=INTERRUPTED_SUMMARY,
            content=None,
            synthetic=True,
        ),
    ]
    assert validate_wire(to_wire(pod.history.items)) == []


def test_resume_runs_never_started_calls() -> None:
    pod = SimPod()
    pod.machine.send("run", segments=[TextSegment(text="go")])
    pod.step(7 * 1 + 1)  # one tool call
    pod.machine.send("pause")
    pod.step(2)
    pod.machine.send("resume")
    pod.step(2)  # the tool runs; the round completes
    assert pod.leaf == "requesting"
    results = [i for i in pod.history.items if isinstance(i, ToolResult)]
    assert [(r.call_id, r.summary, r.synthetic) for r in results] == [
        ("toolu_1", "Read toolu_1", False)
    ]
