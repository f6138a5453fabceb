"""The named sets and queries of :mod:`states.queries` say what the machine does.

Each is checked against the machine itself (its transition table, or a machine started in
each state), so a state added to :mod:`states.lifecycle` or an edge moved fails here until
the query that depends on it is brought along.
"""

from __future__ import annotations

import pytest
from statemachine.exceptions import TransitionNotAllowed

from states.lifecycle import METHOD_EVENTS, OUTCOME_EVENTS, PodLifecycle
from states.queries import (
    AT_REST,
    BUSY,
    COMPACTING,
    REWIND_FROM,
    REWINDING,
    TOOLS_RUN,
    UNLOADABLE,
    awaiting_approval,
    awaiting_input,
    busy_reason,
    input_answerable,
    methods_taken,
    running_tools,
)
from states.table import EVENT_ARGUMENTS, TABLE_STATES, RecordingModel, transition_row

LEAVES = frozenset(state.id for state in PodLifecycle.states_map.values() if not state.states)
FINAL = frozenset(state.id for state in PodLifecycle.states_map.values() if state.final)


def _allowed(event: str) -> frozenset[str]:
    return frozenset(s for s in TABLE_STATES if transition_row(s, event).allowed)


def _targets(event: str) -> frozenset[str]:
    """Where the event moves a pod to (a round marker that changes nothing is left out)."""
    rows = [transition_row(s, event) for s in TABLE_STATES]
    return frozenset(row.target for row in rows if row.allowed and row.target != row.state)


def test_at_rest_is_where_no_outcome_is_taken() -> None:
    resting = {
        s for s in TABLE_STATES if not any(transition_row(s, e).allowed for e in OUTCOME_EVENTS)
    }
    assert resting == AT_REST


def test_unloadable_is_at_rest_and_not_final() -> None:
    assert {"stopped"} == FINAL
    assert UNLOADABLE == AT_REST - FINAL


def test_every_other_state_says_why_it_is_busy() -> None:
    assert set(BUSY) == LEAVES - UNLOADABLE
    assert all(busy_reason(s) is None for s in UNLOADABLE)
    assert busy_reason("awaiting_approval") == "a turn is waiting for an approval"
    assert busy_reason("requesting") == "a turn is running"
    assert all(BUSY[s] for s in BUSY)


def test_rewind_from_is_where_the_machine_takes_a_rewind() -> None:
    assert _allowed("rewind") == REWIND_FROM
    assert {s for s in TABLE_STATES if "rewind" in methods_taken(s)} == REWIND_FROM


def test_compacting_and_rewinding_are_where_those_tasks_run() -> None:
    assert _targets("compact") | _targets("compaction_started") == COMPACTING
    assert _targets("rewind") == REWINDING
    # Each ends by its own outcome: nothing else leads out of it but a shutdown.
    assert all(transition_row(s, "compaction_done").allowed for s in COMPACTING - {"summarizing"})


def test_tools_run_where_a_round_runs_or_waits_for_a_person() -> None:
    waits = _targets("approval_needed") | _targets("input_needed")
    assert _targets("tools_started") | waits == TOOLS_RUN
    assert {s for s in LEAVES if running_tools(s)} == _targets("tools_started")


def test_awaiting_approval_is_where_approve_is_taken() -> None:
    assert {s for s in LEAVES if awaiting_approval(s)} == _allowed("approve") == _allowed("deny")


def test_awaiting_input_is_where_an_answer_needs_no_condition() -> None:
    # The table's model has no request for input waiting: only the input state takes one.
    assert {s for s in LEAVES if awaiting_input(s)} == _allowed("answer_elicitation")


class _InputWaits(RecordingModel):
    def input_waiting(self) -> bool:
        return True


def _answerable(state: str) -> bool:
    machine = PodLifecycle(model=_InputWaits(), start_value=state)
    try:
        machine.send("answer_elicitation", **EVENT_ARGUMENTS["answer_elicitation"])
    except TransitionNotAllowed:
        return False
    return True


def test_input_answerable_is_where_an_answer_is_taken_while_one_waits() -> None:
    assert {s for s in TABLE_STATES if _answerable(s)} == {s for s in LEAVES if input_answerable(s)}


@pytest.mark.parametrize(
    ("state", "taken", "refused"),
    [
        ("idle", {"run", "notify", "compact", "rewind", "shutdown"}, {"resume", "approve"}),
        ("paused", {"run", "resume", "rewind", "compact", "shutdown"}, {"approve", "deny"}),
        ("awaiting_approval", {"approve", "deny", "pause", "cancel"}, {"run", "rewind"}),
        ("stopped", set(), {"run", "shutdown", "resume"}),
    ],
)
def test_methods_taken(state: str, taken: set[str], refused: set[str]) -> None:
    methods = methods_taken(state)
    assert taken <= methods
    assert not refused & methods
    assert methods <= set(METHOD_EVENTS)


def test_the_queries_module_loads_without_the_machine() -> None:
    import subprocess
    import sys

    code = (
        "import sys, states.queries, states\n"
        "assert 'statemachine' not in sys.modules, 'the machine was loaded'\n"
        "assert 'states.lifecycle' not in sys.modules\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
