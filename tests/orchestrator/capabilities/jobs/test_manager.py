"""The jobs manager with real processes and real spool files: start, read, wait, kill, the
limits, shutdown, and the report of jobs a crash ended."""

from __future__ import annotations

import asyncio
import errno
import os
from pathlib import Path

import pytest
from pydantic import BaseModel

from orchestrator.adapters.session import JobRecord, SessionWriteError
from orchestrator.capabilities.jobs import Job, JobError, Jobs, JobSpools
from orchestrator.capabilities.jobs.job import complete_prefix
from orchestrator.config.sections import JobsConfig

TICKS = "for i in $(seq 1 100); do echo tick $i; sleep 0.1; done"


class Journal:
    """Records in memory; ``refuse`` makes every write fail like a full disk."""

    def __init__(self) -> None:
        self.records: list[JobRecord] = []
        self.refuse = False

    def record(self, record: BaseModel) -> None:
        if self.refuse:
            raise SessionWriteError(Path("s.jsonl"), OSError(errno.ENOSPC, "No space left"))
        assert isinstance(record, JobRecord)
        self.records.append(record)


def _jobs(tmp_path: Path, journal: Journal | None = None, **limits: int) -> Jobs:
    return Jobs(
        limits=JobsConfig(**limits),
        spools=JobSpools(tmp_path / "s.jsonl"),
        journal=journal if journal is not None else Journal(),
    )


async def _start(jobs: Jobs, command: str, cwd: Path) -> Job:
    return await jobs.start(command, call_id="toolu_1", cwd=cwd, env=dict(os.environ))


def _group_gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


async def _until(predicate: object, within_s: float = 10.0) -> None:
    assert callable(predicate)
    deadline = asyncio.get_running_loop().time() + within_s
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "the condition never held"
        await asyncio.sleep(0.02)


async def test_a_job_runs_to_its_end_and_its_records_bracket_it(tmp_path: Path) -> None:
    journal = Journal()
    jobs = _jobs(tmp_path, journal)
    job = await _start(jobs, "echo hello; echo oops >&2; exit 3", tmp_path)
    # The start record was written before the process started.
    assert [(r.phase, r.id, r.command, r.call_id) for r in journal.records] == [
        ("start", "j1", "echo hello; echo oops >&2; exit 3", "toolu_1")
    ]
    assert await jobs.wait(job, 10)
    assert (job.state, job.exit_code) == ("exited", 3)
    assert jobs.read(job, 0, 1000).text == "hello\noops\n"
    [_, end] = journal.records
    assert (end.phase, end.id, end.how, end.exit_code, end.output_bytes) == (
        "end", "j1", "exited", 3, 11,
    )  # fmt: skip
    await jobs.close()


async def test_output_grows_and_is_read_from_an_offset(tmp_path: Path) -> None:
    jobs = _jobs(tmp_path)
    job = await _start(jobs, TICKS, tmp_path)
    await _until(lambda: job.kept_bytes >= len("tick 1\ntick 2\n"))
    first = jobs.read(job, 0, 1000)
    assert first.text.startswith("tick 1\ntick 2\n")
    await _until(lambda: job.kept_bytes > first.end)
    second = jobs.read(job, first.end, 1000)
    assert second.start == first.end and second.text.startswith(
        f"tick {first.text.count('tick') + 1}"
    )
    await jobs.close()


async def test_kill_ends_the_whole_process_group(tmp_path: Path) -> None:
    journal = Journal()
    jobs = _jobs(tmp_path, journal)
    job = await _start(jobs, f"sleep 300 & {TICKS}", tmp_path)
    await _until(lambda: job.kept_bytes > 0)
    pgid = job.pgid
    assert pgid is not None and not _group_gone(pgid)
    assert await jobs.kill("j1") is job
    assert job.state == "killed" and not job.running
    await _until(lambda: _group_gone(pgid))
    assert journal.records[-1].how == "killed"
    assert (await jobs.kill("j1")).state == "killed"  # ending it twice is harmless
    await jobs.close()


async def test_a_cancelled_wait_leaves_the_job_running(tmp_path: Path) -> None:
    jobs = _jobs(tmp_path)
    job = await _start(jobs, TICKS, tmp_path)
    waiter = asyncio.ensure_future(jobs.wait(job, 60))
    await asyncio.sleep(0.1)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    seen = job.kept_bytes
    await _until(lambda: job.kept_bytes > seen)
    assert job.running
    await jobs.close()


async def test_past_max_jobs_a_start_is_refused_naming_the_running_ones(tmp_path: Path) -> None:
    jobs = _jobs(tmp_path, max_jobs=1)
    await _start(jobs, "sleep 300", tmp_path)
    with pytest.raises(JobError, match=r"jobs\.max_jobs = 1\): j1 `sleep 300` running"):
        await _start(jobs, "echo no", tmp_path)
    await jobs.kill("j1")
    assert (await _start(jobs, "true", tmp_path)).id == "j2"
    await jobs.close()


async def test_the_limit_holds_for_starts_of_one_round(tmp_path: Path) -> None:
    jobs = _jobs(tmp_path, max_jobs=2)
    starts = [_start(jobs, "sleep 300", tmp_path) for _ in range(3)]
    outcomes = await asyncio.gather(*starts, return_exceptions=True)
    assert [type(o).__name__ for o in outcomes] == ["Job", "Job", "JobError"]
    assert len(jobs.running()) == 2
    await jobs.close()


async def test_output_past_the_spool_cap_is_read_and_dropped(tmp_path: Path) -> None:
    jobs = _jobs(tmp_path, max_spool_bytes=1000)
    job = await _start(jobs, "head -c 200000 /dev/zero | tr '\\0' x; echo done", tmp_path)
    assert await jobs.wait(job, 20)  # it never blocked on a full pipe
    assert job.exit_code == 0
    assert (job.kept_bytes, job.dropped_bytes) == (1000, 199_005)
    assert (tmp_path / "s.jobs" / "j1.log").stat().st_size == 1000
    await jobs.close()


async def test_no_job_starts_when_its_start_cannot_be_recorded(tmp_path: Path) -> None:
    journal = Journal()
    journal.refuse = True
    jobs = _jobs(tmp_path, journal)
    marker = tmp_path / "ran"
    with pytest.raises(JobError, match="not started: cannot write the session file"):
        await _start(jobs, f"touch {marker}", tmp_path)
    await asyncio.sleep(0.2)
    assert not marker.exists() and jobs.jobs() == []


async def test_shutdown_ends_every_job_and_records_it(tmp_path: Path) -> None:
    journal = Journal()
    jobs = _jobs(tmp_path, journal)
    one = await _start(jobs, TICKS, tmp_path)
    two = await _start(jobs, "sleep 300", tmp_path)
    groups = [one.pgid, two.pgid]
    await jobs.close()
    assert all(pgid is not None and _group_gone(pgid) for pgid in groups)
    assert sorted((r.id, r.how) for r in journal.records if r.phase == "end") == [
        ("j1", "shutdown"),
        ("j2", "shutdown"),
    ]
    assert not (tmp_path / "s.jobs").exists()  # spools go once their ends are recorded


async def test_a_job_that_ended_unheard_is_noted_once(tmp_path: Path) -> None:
    jobs = _jobs(tmp_path)
    quick = await _start(jobs, "echo hi", tmp_path)
    slow = await _start(jobs, "sleep 300", tmp_path)
    assert await jobs.wait(quick, 10)
    [note] = jobs.take_notes()
    assert note.origin == "jobs"
    assert note.text.startswith("[Background jobs] j1 `echo hi` exited 0 after ")
    assert "Still running: j2 `sleep 300` running" in note.text
    assert jobs.take_notes() == []  # nothing changed since
    await jobs.kill(slow.id)
    slow.told = True  # job_kill's result told the model
    assert jobs.take_notes() == []
    await jobs.close()


def _spool(tmp_path: Path, name: str, text: str) -> None:
    folder = tmp_path / "s.jobs"
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(text)


async def test_a_job_a_crash_ended_is_reported_once_with_its_output(tmp_path: Path) -> None:
    _spool(tmp_path, "j1.log", "ok\n")
    _spool(tmp_path, "j2.log", "".join(f"line {i}\n" for i in range(1000)))
    records = [
        JobRecord(phase="start", id="j1", command="make", spool="j1.log", started_ms=1000),
        JobRecord(phase="end", id="j1", how="exited", exit_code=0),
        JobRecord(phase="start", id="j2", command="npm run dev", spool="j2.log", started_ms=1000),
    ]
    alerts: list[tuple[str, str]] = []
    journal = Journal()
    jobs = Jobs(
        limits=JobsConfig(),
        spools=JobSpools(tmp_path / "s.jsonl"),
        journal=journal,
        alert=lambda level, message: alerts.append((level, message)),
    )
    jobs.recover(records, last_write_ms=5000)
    assert alerts == [
        (
            "warn",
            "a background job was ended when the pod stopped unexpectedly: j2 (`npm run dev`); "
            "the model is told, with the end of their output",
        )
    ]
    assert not (tmp_path / "s.jobs" / "j1.log").exists()  # reported already: gone
    assert jobs.reports_pending
    [note] = jobs.take_notes()
    assert "- j2 `npm run dev`: ran at least " in note.text
    assert note.text.rstrip().endswith("line 999\n```".rstrip())
    assert "line 0\n" not in note.text  # only its last bytes
    jobs.delivered()
    assert [(r.phase, r.id, r.how) for r in journal.records] == [("end", "j2", "crash")]
    assert not (tmp_path / "s.jobs" / "j2.log").exists()
    assert not jobs.reports_pending and jobs.take_notes() == []
    # Ids go on after the highest the session held.
    assert (await _start(jobs, "true", tmp_path)).id == "j3"
    with pytest.raises(JobError, match="earlier run of the pod"):
        jobs.get("j1")
    await jobs.close()


def test_a_half_written_character_waits_for_its_rest() -> None:
    text = "añ€😀".encode()
    assert complete_prefix(text) == len(text)
    assert complete_prefix(text[:-1]) == len(text) - 4
    assert complete_prefix(text[:-3]) == len(text) - 4
    assert complete_prefix(text[:-4]) == len(text) - 4  # "€" is whole
    assert complete_prefix(b"abc") == 3


async def test_reads_cut_on_a_character_and_unknown_ids_are_named(tmp_path: Path) -> None:
    jobs = _jobs(tmp_path)
    job = await _start(jobs, "printf 'ab€cd'", tmp_path)
    assert await jobs.wait(job, 10)
    first = jobs.read(job, 0, 3)
    assert (first.text, first.end) == ("ab", 2)
    assert jobs.read(job, first.end, 100).text == "€cd"
    assert jobs.read(job, 10_000, 100).text == ""
    with pytest.raises(JobError, match=r"no background job 'j9'; jobs: j1 \(exit 0\)"):
        jobs.get("j9")
    await jobs.close()
