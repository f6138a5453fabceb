"""What is said about background jobs, in words (pure): to the model, to people, in status.

Every text here is bounded: a command is shortened, lists name a few jobs and count the rest,
and output tails have a byte budget, so a pod with many jobs never floods a request.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from orchestrator.adapters.procs.exits import exit_text

__all__ = [
    "COMMAND_CHARS",
    "CRASH_TAIL_BYTES",
    "LISTED_JOBS",
    "CrashedJob",
    "JobLine",
    "change_note",
    "crash_alert",
    "crash_note",
    "duration",
    "exit_text",  # the one text of an exit code (adapters/procs/exits), which the job words use
    "how_it_ended",
    "limit_refusal",
    "running_text",
    "short_command",
    "size",
    "still_running_alert",
]

COMMAND_CHARS = 60
"""A job's command is shown up to this many characters."""
LISTED_JOBS = 8
"""Jobs named one by one in a note or an alert; the rest are counted."""
CRASH_TAIL_BYTES = 2048
"""Output of a job ended by a crash that its report quotes (its last bytes)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class JobLine:
    """What one line about a job needs to say."""

    id: str
    command: str
    state: str
    """``running``, ``exited`` or ``killed``."""
    exit_code: int | None
    ran_s: float
    output_bytes: int


def short_command(command: str) -> str:
    """The command on one line, shortened."""
    flat = " ".join(command.split())
    return flat if len(flat) <= COMMAND_CHARS else flat[: COMMAND_CHARS - 1] + "…"


def duration(seconds: float) -> str:
    """``4s``, ``3m12s``, ``2h05m``."""
    whole = max(0, int(seconds))
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


def size(count: int) -> str:
    """``812 B``, ``4.1 KB``, ``3.2 MB``."""
    if count < 1000:
        return f"{count} B"
    if count < 1_000_000:
        return f"{count / 1000:.1f} KB"
    if count < 1_000_000_000:
        return f"{count / 1_000_000:.1f} MB"
    return f"{count / 1_000_000_000:.1f} GB"


def how_it_ended(line: JobLine) -> str:
    """``exited 0``, ``was killed by the user``, ``killed by SIGSEGV``…"""
    if line.state == "killed":
        # The model hears of its own job_kill in the call's result: what the notes report
        # as killed, a person killed (``pod jobs --kill``).
        return "was killed by the user"
    if line.exit_code is not None and line.exit_code < 0:
        return exit_text(line.exit_code)
    return f"exited {line.exit_code if line.exit_code is not None else '(code unknown)'}"


def running_text(line: JobLine) -> str:
    """``j1 `npm run dev` running 3m12s, 4.1 KB output``."""
    return (
        f"{line.id} `{short_command(line.command)}` running {duration(line.ran_s)}, "
        f"{size(line.output_bytes)} output"
    )


def _listed(parts: Sequence[str]) -> str:
    shown = list(parts[:LISTED_JOBS])
    if len(parts) > LISTED_JOBS:
        shown.append(f"and {len(parts) - LISTED_JOBS} more")
    return "; ".join(shown)


def change_note(ended: Sequence[JobLine], running: Sequence[JobLine]) -> str:
    """The note the model gets at a round boundary when jobs ended without it hearing."""
    parts = [
        f"{line.id} `{short_command(line.command)}` {how_it_ended(line)} after "
        f"{duration(line.ran_s)} ({size(line.output_bytes)} output)"
        for line in ended
    ]
    text = "[Background jobs] " + _listed(parts)
    if running:
        text += ". Still running: " + _listed([running_text(line) for line in running])
    return text + ". job_output reads a job's output."


def still_running_alert(running: Sequence[JobLine], how: str) -> str:
    """The alert when a turn is paused or cancelled while jobs run: they go on."""
    count = len(running)
    jobs = "1 background job still runs" if count == 1 else f"{count} background jobs still run"
    parts = [
        f"{line.id} (`{short_command(line.command)}`, {duration(line.ran_s)})" for line in running
    ]
    return (
        f"the turn was {how}; {jobs}: {_listed(parts)}. `pod jobs` lists them, "
        "`pod jobs --kill ID` ends one; shutdown ends them all"
    )


def limit_refusal(running: Sequence[JobLine], max_jobs: int) -> str:
    """Why a background start was refused: the limit, and the jobs that hold it."""
    return (
        f"not started: {len(running)} background jobs run already, the most at once "
        f"(jobs.max_jobs = {max_jobs}): {_listed([running_text(line) for line in running])}. "
        "Wait for one (job_wait) or end one (job_kill) first."
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class CrashedJob:
    """A job that ran when the pod died: what its records and spool still say."""

    id: str
    command: str
    ran_s: float
    """From its start to its last output (or the session's last write): at least this long."""
    output_bytes: int
    tail: str
    """Its last output (up to :data:`CRASH_TAIL_BYTES`)."""


def crash_note(jobs: Sequence[CrashedJob]) -> str:
    """The note the model gets after a restart: which jobs the pod's death ended, and how
    each ended its output."""
    lines = [
        "[Background jobs] The pod stopped unexpectedly (a crash or a kill) while these "
        "background jobs ran; they were ended with it and are not running now. Start them "
        "again if they are still needed."
    ]
    for job in jobs[:LISTED_JOBS]:
        head = (
            f"- {job.id} `{short_command(job.command)}`: ran at least {duration(job.ran_s)}, "
            f"{size(job.output_bytes)} output"
        )
        if job.tail:
            cut = " (its last bytes)" if job.output_bytes > len(job.tail.encode()) else ""
            lines.append(f"{head}. Output{cut}:\n```\n{job.tail.rstrip()}\n```")
        else:
            lines.append(f"{head}; no output.")
    if len(jobs) > LISTED_JOBS:
        rest = ", ".join(job.id for job in jobs[LISTED_JOBS:])
        lines.append(f"- and {len(jobs) - LISTED_JOBS} more: {rest}")
    return "\n".join(lines)


def crash_alert(jobs: Sequence[CrashedJob]) -> str:
    """The alert a person sees at the restart."""
    parts = [f"{job.id} (`{short_command(job.command)}`)" for job in jobs]
    what = "a background job was" if len(jobs) == 1 else f"{len(jobs)} background jobs were"
    return (
        f"{what} ended when the pod stopped unexpectedly: {_listed(parts)}; the model is "
        "told, with the end of their output"
    )
