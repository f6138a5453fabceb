"""The jobs an earlier run of the pod left running when it died: a ``start`` record and no
``end``. Their processes died with that pod (their supervisors' death signal); each is
reported once, to a person (an alert when the pod starts) and to the model (a note at its
next round boundary), and then its ``end`` record is written and its spool removed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from orchestrator.adapters.session import JobRecord, SessionWriteError
from orchestrator.capabilities.jobs.report import CRASH_TAIL_BYTES, CrashedJob, crash_note
from orchestrator.capabilities.jobs.spools import JobSpools
from orchestrator.core.history import SystemMessage

__all__ = ["CrashedJobs"]


@dataclass(frozen=True, slots=True)
class _Crashed:
    record: JobRecord
    report: CrashedJob


class CrashedJobs:
    """The crashed jobs of a session, from :meth:`take` until their ends are recorded."""

    def __init__(self, spools: JobSpools, redact: Callable[[str], str]) -> None:
        self.spools = spools
        self.redact = redact
        """Known secrets out of the output a report quotes."""
        self.noted = False
        """The model was told of them (their ``end`` records may be written from then on)."""
        self._crashed: list[_Crashed] = []

    def take(self, unended: Iterable[JobRecord], last_write_ms: int) -> list[CrashedJob]:
        """Take the ``start`` records that have no ``end``; the reports of every crashed job."""
        for record in unended:
            self._crashed.append(_Crashed(record, self._report(record, last_write_ms)))
        return [c.report for c in self._crashed]

    @property
    def pending(self) -> bool:
        """Whether a report waits for the model."""
        return bool(self._crashed) and not self.noted

    def note(self) -> SystemMessage | None:
        """The note for the model, once; None when none is pending."""
        if not self.pending:
            return None
        self.noted = True
        return SystemMessage(text=crash_note([c.report for c in self._crashed]), origin="jobs")

    def unrecorded(self) -> int:
        """How many ``end`` records wait for the disk (none before the model was told)."""
        return len(self._crashed) if self.noted else 0

    def spools_needed(self) -> set[str]:
        """The spools still needed (the reports' tails came from them)."""
        return {c.record.spool for c in self._crashed if c.record.spool}

    def record_ends(self, record: Callable[[JobRecord], None]) -> None:
        """Once the model was told: write each crashed job's ``end`` and remove its spool;
        a write the disk refuses stops here, to be tried again later."""
        if not self.noted:
            return
        while self._crashed:
            crashed = self._crashed[0]
            end = JobRecord(
                phase="end",
                id=crashed.record.id,
                how="crash",
                ended_ms=int(time.time() * 1000),
                output_bytes=crashed.report.output_bytes,
            )
            try:
                record(end)
            except SessionWriteError:
                return
            self._crashed.pop(0)
            if crashed.record.spool:
                self.spools.remove(crashed.record.spool)

    def _report(self, record: JobRecord, last_write_ms: int) -> CrashedJob:
        """What the crashed job ran, how long, and the end of its output."""
        spool = record.spool
        size = self.spools.size(spool) if spool else 0
        tail = b""
        last_ms = last_write_ms
        if spool and size:
            tail = self.spools.read(spool, max(0, size - CRASH_TAIL_BYTES), CRASH_TAIL_BYTES)
            while tail and tail[0] & 0xC0 == 0x80:
                tail = tail[1:]  # start on a whole character
            last_ms = max(last_ms, self.spools.mtime_ms(spool))
        return CrashedJob(
            id=record.id,
            command=record.command,
            ran_s=max(0, last_ms - record.started_ms) / 1000,
            output_bytes=size,
            tail=self.redact(tail.decode("utf-8", "replace")),
        )
