"""Unloading a pod: closing its session without a shutdown, so a later load picks it up whole.

A pod host unloads an idle pod to its session file and loads it again when a client
attaches. That is the crash the pod already recovers from, made deliberate: nothing is sent
the machine (``shutdown`` from ``paused`` would close the turn), and what the pod holds only
in memory either goes into the session file or keeps the pod loaded.

* :func:`unload_blockers` says why a pod cannot be unloaded now (empty: it can).
* :func:`unload_session` writes what the pod holds (an ``unload`` record: queued notes, the
  paused turn's pending ``@`` reads and held prompt, finished ``SessionStart`` output, untold
  job endings, touched files), then closes the session file and releases its lock. A load
  of that session (``build_pod``) puts it all back. "Always" answers need nothing here: each
  is recorded in the session when it is given (a ``grant`` record).

Both read the pod through :class:`Unloadable`, the few things they need of its controller;
which states a pod may be unloaded in, and why the others keep it loaded, is the machine's
to say (:data:`states.queries.UNLOADABLE`, :data:`states.queries.BUSY`).

Errors::

    PodRuntimeError
    └── UnloadBlocked      the pod cannot be unloaded now; ``reasons`` says why
"""

from __future__ import annotations

from collections.abc import Sized
from typing import Protocol

from orchestrator.adapters.session import SessionWriteError, UnloadRecord
from orchestrator.errors import PodRuntimeError
from states.queries import busy_reason

__all__ = [
    "UnloadBlocked",
    "Unloadable",
    "unload_blockers",
    "unload_session",
]


class _Task(Protocol):
    @property
    def alive(self) -> bool:
        """Whether a task runs, or ended without its outcome reported yet."""
        ...


class _Approvals(Protocol):
    def pending(self) -> Sized:
        """The calls waiting for an answer."""
        ...


class _Transcript(Protocol):
    @property
    def waiting(self) -> int:
        """How many records wait for the disk."""
        ...

    def record(self, record: UnloadRecord) -> None:
        """Write one record to the session file, synced."""
        ...

    def close(self) -> None:
        """Close the session file and release its lock."""
        ...


class _Jobs(Protocol):
    def running(self) -> Sized:
        """The background jobs still running."""
        ...

    def unrecorded(self) -> int:
        """How many jobs' ends are not on disk yet."""
        ...


class _Children(Protocol):
    @property
    def live(self) -> Sized:
        """The child pods of ``task`` calls still alive."""
        ...


class Unloadable(Protocol):
    """What an unload reads of a pod (its controller), and the two things it asks of it."""

    @property
    def state_id(self) -> str:
        """The machine's leaf state."""
        ...

    @property
    def task(self) -> _Task:
        """The pod's turn, compaction or rewind task."""
        ...

    @property
    def approvals(self) -> _Approvals:
        """Calls waiting for a person's approval."""
        ...

    @property
    def transcript(self) -> _Transcript:
        """The session file's writer."""
        ...

    @property
    def jobs(self) -> _Jobs | None:
        """The pod's background jobs (None: it runs none)."""
        ...

    @property
    def subpods(self) -> _Children | None:
        """The child pods of ``task`` calls (None: the pod offers no ``task``)."""
        ...

    def unfinished_work(self) -> list[str]:
        """The pod's own work outside any task that is not done yet, one reason each."""
        ...

    def held(self) -> UnloadRecord:
        """What lives only in memory and must go into the session file."""
        ...


class UnloadBlocked(PodRuntimeError):
    """The pod cannot be unloaded now; the message lists why, and the pod is untouched."""

    def __init__(self, reasons: list[str]) -> None:
        super().__init__("the pod cannot be unloaded now: " + "; ".join(reasons))
        self.reasons = reasons


def unload_blockers(controller: Unloadable) -> list[str]:
    """Why the pod cannot be unloaded now, one human reason each; empty when it can.

    Pure: it reads the pod and changes nothing. Whether a client is attached, or has been
    lately, is the host's to add.
    """
    reasons: list[str] = []
    busy = busy_reason(controller.state_id)
    if busy is not None:
        reasons.append(busy)
    elif controller.task.alive:
        reasons.append("a task is still ending")
    approvals = len(controller.approvals.pending())
    if approvals:
        reasons.append(_count(approvals, "approval waits", "approvals wait") + " for an answer")
    waiting = controller.transcript.waiting
    if waiting:
        reasons.append(_count(waiting, "record waits", "records wait") + " for the disk")
    jobs = controller.jobs
    if jobs is not None:
        running = len(jobs.running())
        if running:  # jobs belong to the pod: unloading would end them
            reasons.append(_count(running, "background job is", "background jobs are") + " running")
        unrecorded = jobs.unrecorded()
        if unrecorded:
            ends = _count(unrecorded, "background job's end waits", "background jobs' ends wait")
            reasons.append(ends + " for the disk")
    if controller.subpods is not None and controller.subpods.live:
        live = _count(len(controller.subpods.live), "child pod is", "child pods are")
        reasons.append(f"{live} live (task calls)")
    reasons += controller.unfinished_work()
    return reasons


def unload_session(controller: Unloadable) -> UnloadRecord:
    """Record what the pod holds only in memory, then close its session file (releasing the
    lock) without a ``shutdown``; returns what was recorded.

    Raises :class:`UnloadBlocked` (and changes nothing) when :func:`unload_blockers` names a
    reason or the record cannot be written. Synchronous on purpose: nothing can happen to
    the pod between the check and the close. Afterwards the controller must not be used
    again; ``build_pod(..., continue_=True)`` on the same session brings the pod back.
    """
    reasons = unload_blockers(controller)
    if reasons:
        raise UnloadBlocked(reasons)
    held = controller.held()
    try:
        controller.transcript.record(held)
    except SessionWriteError as exc:
        raise UnloadBlocked([str(exc)]) from None
    controller.transcript.close()
    return held


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"
