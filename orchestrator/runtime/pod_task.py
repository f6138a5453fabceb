"""The pod's one task at a time (a turn, or a compaction between turns) and how it ended.

How a task ended is reported from its done callback, never from inside it: a task cancelled
before its first step (``run`` and ``pause`` read in one go) never runs its body, and the
machine must still learn that it ended. For that case the task is started with the outcome
to report (``interrupted``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

log = logging.getLogger(__name__)

Outcome = tuple[str, str | None]
"""How a task ended: the machine event to send and the turn's result, if any."""


class PodTask:
    """Starts, interrupts and awaits the pod's task; reports each outcome exactly once."""

    def __init__(self, report: Callable[[str, str | None], None]) -> None:
        self.report = report
        self._task: asyncio.Task[Outcome] | None = None
        self._interrupted: Outcome = ("turn_interrupted", "cancelled")

    @property
    def alive(self) -> bool:
        """Whether a task runs (or has ended without its outcome reported yet)."""
        return self._task is not None

    def start(self, work: Coroutine[Any, Any, Outcome], *, interrupted: Outcome, name: str) -> None:
        """Run ``work``; ``interrupted`` is reported if it is cancelled before it can answer."""
        task = asyncio.get_running_loop().create_task(work, name=name)
        self._task, self._interrupted = task, interrupted
        task.add_done_callback(self._done)

    def interrupt(self) -> None:
        """Cancel the task; its outcome still arrives through :attr:`report`."""
        if self._task is not None:
            self._task.cancel()

    def _done(self, task: asyncio.Task[Outcome]) -> None:
        if self._task is task:
            self._task = None
        event, result = self._interrupted if task.cancelled() else task.result()
        try:
            self.report(event, result)
        except Exception:
            # Raised in a loop callback nobody awaits: log it, never lose it silently.
            log.exception("reporting the task's outcome failed")

    async def wait_idle(self) -> None:
        """Wait for the current task, if any, to finish and its outcome to be reported."""
        while (task := self._task) is not None:
            await asyncio.wait({task})
            if self._task is task:
                await asyncio.sleep(0)  # let its done callback report the outcome
