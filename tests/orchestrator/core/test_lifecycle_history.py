"""The lifecycle machine driven by a model on the real history functions.

A simulated turn task makes random moves between random methods; after every step the next
request the pod could send must be one the Messages API accepts.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from statemachine.exceptions import TransitionNotAllowed

from orchestrator.core.history import (
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
from orchestrator.core.repair import close_orphans, interrupt_note, pending_tool_calls
from orchestrator.core.segments import FileRefSegment, Segment, TextSegment
from orchestrator.core.validator import validate_wire
from orchestrator.core.wire import WireBuilder, to_wire
from orchestrator.protocol import ProtocolError, RunParams, parse_request
from states.lifecycle import PodLifecycle, leaf_state
from states.table import TABLE_STATES


def leaf(machine: PodLifecycle) -> str:
    """The machine's innermost active state."""
    return leaf_state(frozenset(str(v) for v in machine.configuration_values))


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
        self.run_ends: list[str] = []
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

    def has_queued_notes(self) -> bool:
        return bool(self.notes)

    def request_compaction(self, focus: str | None = None) -> None:
        pass  # compaction replaces the view, not the history: nothing to simulate here

    def start_compaction(self) -> None:
        pass

    def request_rewind(self, to: int = 0, restore: str = "both") -> None:
        pass  # a rewind drops a tail of the history; its own tests drive it (test_rewind_e2e)

    def start_rewind(self) -> None:
        pass

    def turn_open(self) -> bool:
        return len(self.results) < self.history.turn

    def compaction_requested(self) -> bool:
        return False

    def approve_call(self, call_id: str, scope: str = "once") -> None:
        pass  # approvals gate tool starts; the simulation's tools need none

    def deny_call(self, call_id: str, message: str = "", asked: bool = True) -> None:
        pass

    def answer_input(
        self, input_id: str, action: str = "decline", content: dict[str, Any] | None = None
    ) -> None:
        pass  # requests for input come from MCP servers; the simulation has none

    def input_waiting(self) -> bool:
        return False

    def end_turn(self, result: str) -> None:
        self.results.append(result)

    def end_run(self, result: str) -> None:
        self.run_ends.append(result)

    def on_enter_stopped(self) -> None:
        self.inject_queued_notes()

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
