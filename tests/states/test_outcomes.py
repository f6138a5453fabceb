"""The controller's questions about how a turn or run ended, answered in ``states/``."""

from __future__ import annotations

from typing import get_args

from orchestrator.protocol import RunResult
from states import PUBLIC_STATUS, PodLifecycle, RecordingModel
from states.outcomes import (
    TOLD_UPWARD_RESULTS,
    UNFINISHED_RUN_RESULTS,
    is_stopped,
    run_failed,
    run_leaves_work_going,
    start_state,
    turn_told_upward,
)


def test_the_named_results_are_results_the_protocol_knows() -> None:
    results = set(get_args(RunResult))
    assert results >= UNFINISHED_RUN_RESULTS and results >= TOLD_UPWARD_RESULTS
    assert {r for r in results if run_failed(r)} == {"errored"}
    # A run that left work going was not one a parent hears of as ended.
    assert not [r for r in results if run_leaves_work_going(r) and turn_told_upward(r)]


def test_a_loaded_open_turn_starts_the_machine_paused() -> None:
    paused = PodLifecycle(model=RecordingModel(turn_is_open=True), start_value=start_state(True))
    assert PUBLIC_STATUS[paused.current_state_value] == "paused"
    fresh = PodLifecycle(model=RecordingModel(), start_value=start_state(False))
    assert fresh.current_state_value == "idle"


def test_stopped_is_asked_of_the_machine_s_configuration() -> None:
    machine = PodLifecycle(model=RecordingModel())
    assert not is_stopped(machine.configuration_values)
    machine.send("shutdown")
    assert is_stopped(machine.configuration_values)
