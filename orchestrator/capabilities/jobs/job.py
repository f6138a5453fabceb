"""One background job: its process, its spool, and how it ended."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol

from pydantic import BaseModel

from orchestrator.adapters.session import JobEnd, JobRecord
from orchestrator.capabilities.jobs.report import JobLine
from orchestrator.capabilities.tools.base import ToolError

if TYPE_CHECKING:
    from orchestrator.adapters.procs import Supervised

__all__ = ["READ_CHUNK", "Job", "JobError", "JobJournal", "JobState", "OutputChunk", "started_text"]

log = logging.getLogger(__name__)

JobState = Literal["running", "exited", "killed"]
READ_CHUNK = 64 * 1024


@dataclass(eq=False, kw_only=True)
class Job:
    """A command started with ``background: true``, from its start record to its end."""

    id: str
    """``j1``, ``j2``, … (never reused within a session)."""
    command: str
    call_id: str
    """The ``bash`` call that started it."""
    spool: str
    """Its output file's name in the session's ``.jobs`` folder."""
    started_ms: int
    state: JobState = "running"
    exit_code: int | None = None
    """The command's exit code (negative: killed by that signal); None while it runs, or when
    its supervisor died first."""
    ended_ms: int | None = None
    kept_bytes: int = 0
    """Output in the spool."""
    dropped_bytes: int = 0
    """Output read past the spool cap and dropped."""
    shown: int = 0
    """Where the output the model was last shown (``job_output``, ``job_wait``) stopped."""
    told: bool = False
    """The model has heard how the job ended (a tool result or a note said so)."""
    ending: JobEnd | None = None
    """Why the pod ends it (``killed``, ``shutdown``), once it does."""
    recorded: bool = False
    """Its ``end`` record is on disk."""
    proc: Supervised | None = None
    spool_fd: int | None = None
    finished: asyncio.Event = field(default_factory=asyncio.Event)
    """Set once it ended, its output is all in the spool and its end is known."""
    watcher: asyncio.Task[None] | None = None
    stopper: asyncio.Task[None] | None = None
    """Ending it (``job_kill``, ``kill_job``), shared by whoever asks meanwhile."""

    @property
    def running(self) -> bool:
        """Whether it has not ended yet."""
        return self.state == "running"

    @property
    def output_bytes(self) -> int:
        """Everything it printed, including what the cap dropped."""
        return self.kept_bytes + self.dropped_bytes

    @property
    def pgid(self) -> int | None:
        """Its process group (its supervisor leads it; the command is in it)."""
        return self.proc.process.pid if self.proc is not None else None

    def ran_s(self, now_ms: int | None = None) -> float:
        """How long it ran (so far)."""
        end = self.ended_ms if self.ended_ms is not None else now_ms or int(time.time() * 1000)
        return max(0, end - self.started_ms) / 1000

    def line(self) -> JobLine:
        """What the texts about jobs need of it."""
        return JobLine(
            id=self.id,
            command=self.command,
            state=self.state,
            exit_code=self.exit_code,
            ran_s=self.ran_s(),
            output_bytes=self.output_bytes,
        )

    def start_record(self) -> JobRecord:
        """The ``start`` record, synced before its process starts."""
        return JobRecord(
            phase="start",
            id=self.id,
            command=self.command,
            call_id=self.call_id,
            spool=self.spool,
            started_ms=self.started_ms,
        )

    def end_record(self) -> JobRecord:
        """The ``end`` record, once it ended: how, its code, when, how much it printed."""
        how: JobEnd = self.ending or "exited"
        return JobRecord(
            phase="end",
            id=self.id,
            how=how,
            exit_code=self.exit_code,
            ended_ms=self.ended_ms,
            output_bytes=self.output_bytes,
        )

    def close_spool(self) -> None:
        """Close the spool file (the output read from here on is only counted)."""
        if self.spool_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.spool_fd)
            self.spool_fd = None

    async def pump(self, stream: asyncio.StreamReader, max_spool_bytes: int) -> None:
        """Copy the job's output to its spool, up to ``max_spool_bytes`` kept; past that, or
        once the spool cannot be written, the output is read and only counted."""
        while chunk := await stream.read(READ_CHUNK):
            room = max_spool_bytes - self.kept_bytes
            kept = chunk[: max(0, room)] if self.spool_fd is not None else b""
            if kept:
                try:
                    view = memoryview(kept)
                    while view:
                        view = view[os.write(self.spool_fd, view) :]  # type: ignore[arg-type]
                except OSError:
                    # A full disk: the job goes on, its output is only counted from here.
                    log.warning("job %s: cannot write its output file", self.id, exc_info=True)
                    self.close_spool()
                    kept = kept[: len(kept) - len(view)]
            self.kept_bytes += len(kept)
            self.dropped_bytes += len(chunk) - len(kept)


def complete_prefix(data: bytes) -> int:
    """The length of ``data`` without a trailing, incomplete UTF-8 character (its rest may
    still be on its way): what a reader can decode now and resume after."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 == 0x80:
            continue  # a continuation byte: look further back for its lead
        width = 2 if 0xC0 <= byte < 0xE0 else 3 if 0xE0 <= byte < 0xF0 else 4 if byte >= 0xF0 else 1
        return len(data) - back if back < width else len(data)
    return len(data)


class JobError(ToolError):
    """A job cannot be started, found or read; the message says why (the model reads it as
    an ``is_error`` result, a client as an error)."""


class JobJournal(Protocol):
    """Where job records are written (the pod's transcript)."""

    def record(self, record: BaseModel) -> None:
        """Write and sync the record; raise :class:`SessionWriteError` if the disk refuses."""
        ...


@dataclass(frozen=True, slots=True)
class OutputChunk:
    """Part of a job's output, as bytes ``start``–``end`` of its spool."""

    text: str
    start: int
    end: int
    """Where the next read starts (``since`` of the next ``job_output``)."""
    kept: int
    """Bytes in the spool now."""


def started_text(job: Job) -> str:
    """What ``bash`` answers when it started a job."""
    return (
        f"It runs until it exits, job_kill ends it, or the pod stops (pause and cancel leave "
        f'it running). Read its output with job_output(id="{job.id}"), wait for it with '
        f'job_wait(id="{job.id}").'
    )
