"""The pod's background jobs: started by ``bash`` with ``background: true``, owned by the pod.

A job belongs to the pod, not to the turn that started it: pause and cancel leave it running
(and say so), shutdown ends it, and a crash ends it with the pod (its supervisor's death
signal) — the next start tells the model and a person, with its last output.

Write-ahead, as for tool calls: a job's ``start`` record is synced before its process starts,
and its ``end`` record written when it is over, so after a crash the session knows exactly
which jobs were running, and no job ever runs twice. Output goes from a pipe the pod reads
into a spool file, capped: past ``max_spool_bytes`` it is read and dropped (counted), so a job
never blocks on a full pipe.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.adapters.procs import Supervision, spawn
from orchestrator.adapters.session import JobRecord, SessionWriteError
from orchestrator.capabilities.jobs.crashes import CrashedJobs
from orchestrator.capabilities.jobs.job import (
    Job,
    JobError,
    JobJournal,
    OutputChunk,
    complete_prefix,
)
from orchestrator.capabilities.jobs.report import (
    change_note,
    crash_alert,
    exit_text,
    limit_refusal,
    still_running_alert,
)
from orchestrator.capabilities.jobs.spools import JobSpools
from orchestrator.config.sections import JobsConfig
from orchestrator.core.history import SystemMessage
from orchestrator.core.tool_output import utf8_cut
from orchestrator.protocol import JobData
from orchestrator.protocol.filling import to_data

if TYPE_CHECKING:
    from orchestrator.adapters.procs import Ledger

log = logging.getLogger(__name__)

GRACE_S = 0.5
"""Between SIGTERM and SIGKILL when a job is ended: a server gets a moment to close cleanly."""
DRAIN_S = 0.5
"""How long to wait for the rest of a job's output once its supervisor has exited."""
ENDED_KEPT = 32
"""Ended jobs kept (with their spools) for ``job_output`` and ``status``; older ones go."""

_JOB_ID = re.compile(r"j(\d+)")


class Jobs:
    """Owns the pod's background jobs: starts them, reads and ends them, records them."""

    def __init__(
        self,
        *,
        limits: JobsConfig,
        spools: JobSpools,
        journal: JobJournal | None = None,
        alert: Callable[[str, str], None] | None = None,
        redact: Callable[[str], str] | None = None,
    ) -> None:
        self.limits = limits
        self.spools = spools
        self.journal = journal
        """None runs without records (tests)."""
        self.alert = alert or (lambda level, message: None)
        self.redact = redact or (lambda text: text)
        """Known secrets out of output quoted outside a tool result (a crash report)."""
        self.on_change: Callable[[], None] | None = None
        """Called when a job starts or ends (the pod broadcasts its status)."""
        self.on_ended: Callable[[Job], None] | None = None
        """Called when a job has ended (the sandbox checks what it planted)."""
        self._jobs: dict[str, Job] = {}
        self._next = 1
        self._earlier: set[str] = set()
        """Ids of jobs of earlier runs of the pod on this session (all ended)."""
        self._forgotten: set[str] = set()
        """Ids of ended jobs dropped to keep the list short (:data:`ENDED_KEPT`)."""
        self._crashes = CrashedJobs(spools, self.redact)
        """Jobs an earlier run left running when it died, until their ends are recorded."""
        self._launching = 0
        """Jobs whose start is recorded and whose process is being started."""

    # -- start-up ---------------------------------------------------------------------------

    def recover(self, records: list[JobRecord], *, last_write_ms: int = 0) -> None:
        """Take the session's job records: ids go on from the highest, and each job that
        started but never ended (the pod died while it ran) is reported once."""
        starts: dict[str, JobRecord] = {}
        ended: set[str] = set()
        for record in records:
            match = _JOB_ID.fullmatch(record.id)
            if match is not None:
                self._next = max(self._next, int(match.group(1)) + 1)
            self._earlier.add(record.id)
            if record.phase == "start":
                starts[record.id] = record
            else:
                ended.add(record.id)
        unended = [record for job_id, record in starts.items() if job_id not in ended]
        reports = self._crashes.take(unended, last_write_ms)
        if reports:
            self.alert("warn", crash_alert(reports))
        self.spools.clear(frozenset(self._crashes.spools_needed()))

    # -- starting ---------------------------------------------------------------------------

    async def start(
        self,
        command: str,
        *,
        call_id: str,
        cwd: Path,
        env: Mapping[str, str],
        ledger: Ledger | None = None,
        argv: Sequence[str] | None = None,
    ) -> Job:
        """Record and start a job; :class:`JobError` when it cannot start (nothing runs).

        ``argv`` runs it (the shell in the sandbox); ``/bin/bash -c command`` by default."""
        running = self.running()
        # Jobs of the same round being launched count too: calls of a round run concurrently.
        if len(running) + self._launching >= self.limits.max_jobs:
            raise JobError(limit_refusal([j.line() for j in running], self.limits.max_jobs))
        job_id = f"j{self._next}"
        self._next += 1  # never reused, even when this start fails
        try:
            spool, fd = self.spools.create(job_id)
        except OSError as exc:
            raise JobError(f"not started: cannot create its output file: {exc}") from None
        job = Job(
            id=job_id,
            command=command,
            call_id=call_id,
            spool=spool,
            started_ms=int(time.time() * 1000),
            spool_fd=fd,
        )
        try:
            self._record(job.start_record())
        except SessionWriteError as exc:
            # Never start a job the session cannot remember starting.
            job.close_spool()
            self.spools.remove(spool)
            raise JobError(f"not started: {exc}") from None
        # Shielded: once its start is recorded, a pause must not leave the job half-launched
        # (started, but with nobody reading its output or recording its end).
        self._launching += 1
        shell = list(argv) if argv is not None else ["/bin/bash", "-c", command]
        launch = asyncio.ensure_future(self._launch(job, shell, cwd=cwd, env=env, ledger=ledger))
        launch.add_done_callback(self._launched)
        return await asyncio.shield(launch)

    def _launched(self, _: asyncio.Future[Job]) -> None:
        self._launching -= 1

    async def _launch(
        self,
        job: Job,
        argv: list[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        ledger: Ledger | None,
    ) -> Job:
        supervision = Supervision(
            grace_s=GRACE_S, report=ledger.record("job") if ledger is not None else None
        )
        try:
            job.proc = await spawn(
                argv,
                supervision,
                cwd=cwd,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                env=dict(env),
            )
        except OSError as exc:
            job.ending = "failed"
            self._jobs[job.id] = job
            self._ended(job, None)
            raise JobError(f"could not start /bin/bash: {exc}") from None
        self._jobs[job.id] = job
        job.watcher = asyncio.ensure_future(self._watch(job))
        self._changed()
        return job

    async def _watch(self, job: Job) -> None:
        """Copy the job's output to its spool until it is over, then record its end."""
        proc = job.proc
        assert proc is not None and proc.process.stdout is not None
        pump = asyncio.ensure_future(job.pump(proc.process.stdout, self.limits.max_spool_bytes))
        code: int | None = None
        try:
            # The supervisor exits once the command and everything it left are gone; then
            # the pipe has no writer left, and the last output is read at once.
            await proc.process.wait()
            await asyncio.wait({pump}, timeout=DRAIN_S)
            code = await asyncio.wait_for(proc.exited(), DRAIN_S)
        except TimeoutError:
            pass
        finally:
            if not pump.done():
                pump.cancel()
            self._ended(job, code)

    def _ended(self, job: Job, code: int | None) -> None:
        """The job is over: say how, record it, and let waiters go."""
        if not job.running:
            return
        job.state = "killed" if job.ending in ("killed", "shutdown") else "exited"
        job.exit_code = code
        job.ended_ms = int(time.time() * 1000)
        job.close_spool()
        try:
            self._record(job.end_record())
            job.recorded = True
        except SessionWriteError:
            log.warning("job %s: its end is not recorded yet", job.id, exc_info=True)
        job.finished.set()
        self._trim()
        self._changed()
        if self.on_ended is not None:
            try:
                self.on_ended(job)
            except Exception:  # the job's end stands; the check logs its own failure
                log.exception("job %s: the check after its end failed", job.id)

    # -- reading and ending -----------------------------------------------------------------

    def get(self, job_id: str) -> Job:
        """The job called ``job_id``; :class:`JobError` naming the known ones otherwise."""
        job = self._jobs.get(job_id)
        if job is not None:
            return job
        if job_id in self._earlier:
            raise JobError(
                f"job {job_id} belonged to an earlier run of the pod and ended with it; "
                "its output is gone"
            )
        if job_id in self._forgotten:
            raise JobError(f"job {job_id} ended long ago; its output is no longer kept")
        known = ", ".join(f"{j.id} ({self.state_text(j)})" for j in self._jobs.values())
        raise JobError(f"no background job {job_id!r}; " + (f"jobs: {known}" if known else "none"))

    def read(self, job: Job, since: int, max_bytes: int) -> OutputChunk:
        """Up to ``max_bytes`` of the job's output from byte ``since``, cut on a character."""
        kept = job.kept_bytes
        start = min(max(0, since), kept)
        raw = self.spools.read(job.spool, start, min(max_bytes + 1, kept - start))
        if len(raw) > max_bytes:
            cut = utf8_cut(raw, max_bytes)
        else:
            # At the end of what is in: a character may be half written.
            cut = complete_prefix(raw) if job.running else len(raw)
        return OutputChunk(
            text=raw[:cut].decode("utf-8", "replace"), start=start, end=start + cut, kept=kept
        )

    async def wait(self, job: Job, timeout_s: float) -> bool:
        """Wait until the job is over or ``timeout_s`` passed; whether it is over.

        Cancelling the wait (a pause) only stops the waiting: the job runs on.
        """
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(job.finished.wait(), timeout_s)
        return job.finished.is_set()

    async def kill(self, job_id: str) -> Job:
        """End a job and everything it started (SIGTERM, SIGKILL after the grace), and wait
        until its end is known; a job that is over already is returned as it is."""
        job = self.get(job_id)
        if job.running:
            if job.stopper is None:
                job.ending = "killed"
                job.stopper = asyncio.ensure_future(self._stop(job))
            # Shielded: a pause of the turn that asked must not leave the job half-ended.
            await asyncio.shield(job.stopper)
        return job

    async def _stop(self, job: Job) -> None:
        if job.proc is not None:
            await job.proc.close()
        try:
            await asyncio.wait_for(job.finished.wait(), DRAIN_S * 4)
        except TimeoutError:
            self._ended(job, job.proc.code if job.proc is not None else None)

    async def close(self) -> None:
        """The pod stops: end every running job, record the ends, drop the spools."""
        for job in self.running():
            if job.stopper is None:
                job.ending = "shutdown"
                job.stopper = asyncio.ensure_future(self._stop(job))
        stoppers = [job.stopper for job in self._jobs.values() if job.stopper is not None]
        if stoppers:
            await asyncio.gather(*stoppers, return_exceptions=True)
        self._retry_ends()
        keep = {job.spool for job in self._jobs.values() if not job.recorded}
        keep |= self._crashes.spools_needed()
        self.spools.clear(frozenset(keep))

    # -- what is said about them ------------------------------------------------------------

    def running(self) -> list[Job]:
        """The jobs that run now, oldest first."""
        return [job for job in self._jobs.values() if job.running]

    def jobs(self) -> list[Job]:
        """Every job of this run of the pod still known, oldest first."""
        return list(self._jobs.values())

    @staticmethod
    def state_text(job: Job) -> str:
        """``running``, ``exited 0``, ``killed``."""
        if job.running:
            return "running"
        return "killed" if job.state == "killed" else exit_text(job.exit_code)

    def data(self) -> list[JobData]:
        """The jobs as ``status`` reports them."""
        return [to_data(JobData, job) for job in self._jobs.values()]

    def still_running(self, how: str) -> str | None:
        """The alert for a turn that was paused or cancelled (``how``) while jobs run."""
        running = self.running()
        return still_running_alert([j.line() for j in running], how) if running else None

    @property
    def reports_pending(self) -> bool:
        """Whether a crash report waits for the model."""
        return self._crashes.pending

    def take_notes(self) -> list[SystemMessage]:
        """Notes for the model at a round boundary or turn start: the jobs a crash ended
        (once), and jobs that ended since it last heard (once each); none when nothing
        changed, so requests stay the same bytes and the prompt cache keeps hitting."""
        notes: list[SystemMessage] = []
        crashed = self._crashes.note()
        if crashed is not None:
            notes.append(crashed)
        untold = self.untold_note()
        if untold is not None:
            for job in self._untold():
                job.told = True
            notes.append(untold)
        return notes

    def untold_note(self) -> SystemMessage | None:
        """The note about jobs that ended since the model last heard, leaving them untold
        (what an unloaded pod keeps for its next turn); None when none did."""
        untold = self._untold()
        if not untold:
            return None
        lines = [job.line() for job in untold]
        running = [job.line() for job in self.running()]
        return SystemMessage(text=change_note(lines, running), origin="jobs")

    def _untold(self) -> list[Job]:
        return [job for job in self._jobs.values() if not job.running and not job.told]

    def unrecorded(self) -> int:
        """How many ended jobs' ``end`` records wait for the disk (a crash's jobs too, once
        the model was told of them)."""
        ended = sum(1 for job in self._jobs.values() if not job.running and not job.recorded)
        return ended + self._crashes.unrecorded()

    def delivered(self) -> None:
        """The notes are committed: record the end of each job a crash ended, so it is
        reported once (a write that fails is tried again later)."""
        if self._crashes.noted:
            self._retry_ends()

    # -- records ----------------------------------------------------------------------------

    def _record(self, record: JobRecord) -> None:
        if self.journal is not None:
            self.journal.record(record)

    def _retry_ends(self) -> None:
        """Write the end records that could not be written before."""
        for job in self._jobs.values():
            if not job.running and not job.recorded:
                try:
                    self._record(job.end_record())
                except SessionWriteError:
                    return
                job.recorded = True
        self._crashes.record_ends(self._record)

    def _trim(self) -> None:
        """Forget the oldest ended jobs past :data:`ENDED_KEPT` (heard of and recorded)."""
        ended = [j for j in self._jobs.values() if not j.running and j.told and j.recorded]
        for job in ended[: max(0, len(ended) - ENDED_KEPT)]:
            del self._jobs[job.id]
            self._forgotten.add(job.id)
            self.spools.remove(job.spool)

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change()
