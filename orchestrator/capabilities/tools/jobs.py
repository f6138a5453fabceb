"""``job_output``, ``job_wait`` and ``job_kill``: the model's hands on its background jobs.

They are offered only with ``bash`` (which starts the jobs). Permission kinds (see
docs/permissions.md and docs/jobs.md):

- ``job_output`` and ``job_wait`` are reads: they show output the pod already holds and start
  nothing, so they run in every mode. No side effects: after a crash they may simply run again.
- ``job_kill`` is an ``edit``: it changes what runs, but only by ending a job an allowed
  ``bash`` call started, and it starts nothing. So it runs without asking in ``accept-edits``
  and ``yolo``, asks in ``default`` (as the ``bash`` call that started the job did), and a
  ``deny = ["job_kill"]`` rule stops it. Ending a job twice is harmless, so it needs no
  write-ahead record either.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from orchestrator.adapters.procs.exits import exit_text
from orchestrator.capabilities.jobs.report import size
from orchestrator.capabilities.tools.arguments import ToolArgs, TypedTool
from orchestrator.capabilities.tools.base import ToolContext, ToolOutput
from orchestrator.capabilities.tools.timeouts import TimeoutCeiling, timeout_field

if TYPE_CHECKING:
    from orchestrator.capabilities.jobs import Job, Jobs, OutputChunk

JOB_ID = Field(min_length=1, description="The job's id, as bash returned it (j1, j2, …).")

KILL_TAIL_BYTES = 2048
"""Output ``job_kill`` shows: the job's last bytes."""


class JobOutputArgs(ToolArgs):
    """``job_output``'s arguments."""

    id: str = JOB_ID
    since: int = Field(
        0,
        ge=0,
        description="Byte offset to read from: 0 for the start, or the next offset an earlier "
        "job_output or job_wait reported.",
    )


WAITS_AT_MOST = "Seconds to wait at most"
"""What ``job_wait``'s ``timeout_s`` bounds, in its schema."""


class JobWaitArgs(ToolArgs):
    """``job_wait``'s arguments; the timeout's ceiling comes from the config."""

    id: str = JOB_ID
    timeout_s: float | None = timeout_field(WAITS_AT_MOST)


class JobKillArgs(ToolArgs):
    """``job_kill``'s arguments."""

    id: str = JOB_ID


def _state(job: Job) -> str:
    """``running for 12 s``, ``exited 0 after 3.2 s``, ``was killed after 9.0 s``."""
    if job.running:
        return f"running for {job.ran_s():.0f} s"
    if job.state == "killed":
        ended = "was killed"
    elif job.exit_code is None:
        ended = "ended (exit code unknown)"
    elif job.exit_code >= 0:
        ended = f"exited {job.exit_code}"
    else:
        ended = exit_text(job.exit_code)
    return f"{ended} after {job.ran_s():.1f} s"


def _chunk_output(job: Job, chunk: OutputChunk, verb: str) -> ToolOutput:
    """A piece of a job's output, with where the next read starts."""
    if not job.running:
        job.told = True  # this result says how it ended
    job.shown = max(job.shown, chunk.end)
    where = (
        f"bytes {chunk.start}-{chunk.end} of {chunk.kept}"
        if chunk.end > chunk.start
        else f"no new output (it has {chunk.kept} bytes)"
    )
    more = f"; more follows: since={chunk.end}" if chunk.end < chunk.kept else ""
    if chunk.end >= chunk.kept and job.running:
        more = f"; next since={chunk.end}"
    dropped = (
        f"; {size(job.dropped_bytes)} past the spool cap were dropped" if job.dropped_bytes else ""
    )
    return ToolOutput(
        summary=f"{verb} {job.id}: {_state(job)}; {where}{more}{dropped}",
        content=chunk.text or None,
    )


class JobOutputTool(TypedTool[JobOutputArgs]):
    """Read a background job's output from a byte offset."""

    name = "job_output"
    claude_code_name = None
    acp_kind = "other"
    side_effects = False
    kind = "read"
    description = (
        "Read the output (stdout and stderr, merged) of a background job that bash started with "
        "background: true, from byte offset `since`. Says whether the job still runs and the "
        "offset to read from next. Does not wait: use job_wait for that."
    )
    args_model = JobOutputArgs

    def __init__(self, jobs: Jobs, *, max_bytes: int) -> None:
        self.jobs = jobs
        self.max_bytes = max(1024, max_bytes)
        """Bytes one call returns at most (the tool's content cap)."""
        super().__init__()

    async def execute(self, args: JobOutputArgs, ctx: ToolContext) -> ToolOutput:
        """Read from ``since``; never blocks."""
        job = self.jobs.get(args.id)
        chunk = self.jobs.read(job, args.since, self.max_bytes)
        return _chunk_output(job, chunk, "job_output")


class JobWaitTool(TypedTool[JobWaitArgs]):
    """Wait for a background job to end, or a while."""

    name = "job_wait"
    claude_code_name = None
    acp_kind = "other"
    side_effects = False
    kind = "read"
    description = (
        "Wait until a background job ends or timeout_s passes, then say whether it still runs "
        "(or its exit code) and return its output since the last job_output or job_wait. "
        "Waiting never ends the job."
    )
    args_model = JobWaitArgs

    def __init__(
        self, jobs: Jobs, *, max_bytes: int, default_timeout_s: float, max_timeout_s: float
    ) -> None:
        self.jobs = jobs
        self.max_bytes = max(1024, max_bytes)
        self.timeout = TimeoutCeiling.of(default_timeout_s, max_timeout_s)
        super().__init__(schema_overrides=self.timeout.schema(WAITS_AT_MOST))

    async def execute(self, args: JobWaitArgs, ctx: ToolContext) -> ToolOutput:
        """Wait; a cancellation (pause) stops only the waiting, never the job."""
        job = self.jobs.get(args.id)
        await self.jobs.wait(job, self.timeout.seconds(args.timeout_s))
        chunk = self.jobs.read(job, job.shown, self.max_bytes)
        return _chunk_output(job, chunk, "job_wait")


class JobKillTool(TypedTool[JobKillArgs]):
    """End a background job and everything it started."""

    name = "job_kill"
    claude_code_name = None
    acp_kind = "other"
    side_effects = False
    kind = "edit"
    description = (
        "End a background job and every process it started (SIGTERM, then SIGKILL). Returns "
        "how it ended and the end of its output."
    )
    args_model = JobKillArgs

    def __init__(self, jobs: Jobs, *, max_bytes: int) -> None:
        self.jobs = jobs
        self.max_bytes = max(1024, min(max_bytes, KILL_TAIL_BYTES))
        super().__init__()

    async def execute(self, args: JobKillArgs, ctx: ToolContext) -> ToolOutput:
        """Kill it (or say it ended already) and show its last output."""
        job = self.jobs.get(args.id)
        was_running = job.running
        await self.jobs.kill(args.id)
        job.told = True
        since = max(0, job.kept_bytes - self.max_bytes)
        chunk = self.jobs.read(job, since, self.max_bytes)
        head = "ended it: it" if was_running else "it was not running: it"
        tail = f"; its last {chunk.end - chunk.start} bytes follow" if chunk.text else "; no output"
        return ToolOutput(
            summary=f"job_kill {job.id}: {head} {_state(job)} "
            f"({size(job.output_bytes)} output){tail}",
            content=chunk.text or None,
        )
