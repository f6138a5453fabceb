"""What a turn's or a run's end means, asked of the machine's vocabulary by name.

The machine decides how a turn and a run end (``end_turn_*`` / ``end_run_*`` in
:mod:`states.lifecycle`); the runtime then acts on that ending (background jobs go on, a
parent pod hears of it). The results and state names those decisions compare live here, so
no module outside ``states/`` spells them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

STOPPED: Final = "stopped"
"""The machine's final state: the pod has stopped."""

PAUSED: Final = "paused"
"""Where a turn waits for ``resume``; a pod loaded with its turn open starts there."""

UNFINISHED_RUN_RESULTS: Final = frozenset({"paused", "cancelled"})
"""Run results that leave the pod's own work (its background jobs) going on after the run."""

TOLD_UPWARD_RESULTS: Final = frozenset({"finished", "limit_reached"})
"""Turn results a parent pod hears of as ``turn_ended``: the turn came to its own end (a
failure is told as ``errored``; a pause or a cancel is the parent's own doing)."""

FAILED_RESULT: Final = "errored"
"""The result of a run whose turn failed."""


def start_state(turn_open: bool) -> str | None:
    """The state a pod's machine starts in: ``paused`` when the pod is loaded with its turn
    still open, else None (the machine's initial state, ``idle``)."""
    return PAUSED if turn_open else None


def is_stopped(configuration: Iterable[str]) -> bool:
    """Whether the machine, in these active states, has stopped."""
    return STOPPED in frozenset(configuration)


def run_leaves_work_going(result: str) -> bool:
    """Whether a run that ended with ``result`` ended before the pod's work did (paused or
    cancelled), so clients should hear that its background jobs go on."""
    return result in UNFINISHED_RUN_RESULTS


def run_failed(result: str) -> bool:
    """Whether a run that ended with ``result`` ended because its turn failed."""
    return result == FAILED_RESULT


def turn_told_upward(result: str) -> bool:
    """Whether a turn that closed with ``result`` is told to a parent pod as ``turn_ended``."""
    return result in TOLD_UPWARD_RESULTS


__all__ = [
    "FAILED_RESULT",
    "PAUSED",
    "STOPPED",
    "TOLD_UPWARD_RESULTS",
    "UNFINISHED_RUN_RESULTS",
    "is_stopped",
    "run_failed",
    "run_leaves_work_going",
    "start_state",
    "turn_told_upward",
]
