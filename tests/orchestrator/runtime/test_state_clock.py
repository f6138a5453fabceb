"""The state clock: each second counted once, in the leaf state it was spent in."""

from __future__ import annotations

from types import SimpleNamespace

from orchestrator.runtime.state_clock import StateClock


class FakeTime:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def state(name: str, *, atomic: bool = True) -> SimpleNamespace:
    return SimpleNamespace(id=name, is_atomic=atomic)


def test_seconds_go_to_the_leaf_state_they_were_spent_in() -> None:
    now = FakeTime()
    clock = StateClock(clock=now)
    clock.on_enter_state(state("idle"))
    now.now += 5
    clock.on_enter_state(state("running", atomic=False))  # compound: not a stretch of its own
    clock.on_enter_state(state("requesting"))
    now.now += 2.5
    clock.on_enter_state(state("idle"))
    now.now += 1
    assert clock.totals() == {"idle": 6.0, "requesting": 2.5}
    # Asking does not close the stretch going on.
    now.now += 1
    assert clock.totals()["idle"] == 7.0
    assert clock.state == "idle"


def test_nothing_is_counted_before_the_first_state() -> None:
    assert StateClock(clock=FakeTime()).totals() == {}
