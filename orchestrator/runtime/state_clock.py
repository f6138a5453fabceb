"""Where a pod's time goes: seconds in each lifecycle state, kept by a machine listener.

The clock never names a state: it keys the seconds by whatever leaf state the machine enters,
so a state added to :mod:`states.lifecycle` is counted without a change here. It counts from
the pod process's start (a load after an unload, or a restart, starts again at zero): the
session file records what was said, not how long the pod waited between records.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["StateClock"]


@dataclass(slots=True)
class StateClock:
    """Seconds spent in each leaf lifecycle state since the pod started.

    A python-statemachine listener: the machine calls :meth:`on_enter_state` for every state
    it enters, the compound ones too; only leaf (atomic) states are counted, so every second
    is counted once.
    """

    clock: Callable[[], float] = time.monotonic
    """Where the seconds come from (a monotonic clock: wall-clock jumps do not count)."""
    seconds: dict[str, float] = field(default_factory=dict)
    """Seconds of the stretches that ended, by state id."""
    state: str | None = None
    """The leaf state the pod is in now (None before the machine entered its first)."""
    since: float = 0.0
    """When the pod entered :attr:`state` (by :attr:`clock`)."""
    started_at: float = field(default_factory=time.time)
    """Unix time the count began."""

    def on_enter_state(self, target: Any) -> None:
        """The machine entered ``target``: close the stretch in the last leaf state."""
        if target.is_atomic:
            self.enter(str(target.id))

    def enter(self, state: str) -> None:
        """Count the time in the previous state and start counting ``state``."""
        now = self.clock()
        if self.state is not None:
            self.seconds[self.state] = self.seconds.get(self.state, 0.0) + (now - self.since)
        self.state, self.since = state, now

    def totals(self) -> dict[str, float]:
        """Seconds by state, the stretch going on now included (rounded to milliseconds)."""
        out = dict(self.seconds)
        if self.state is not None:
            out[self.state] = out.get(self.state, 0.0) + (self.clock() - self.since)
        return {state: round(seconds, 3) for state, seconds in out.items()}
