"""The supervisor with real processes: whatever a command starts, ``setsid`` children
included, ends when the pod dies, when the pod asks, or with the command."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.adapters.procs import (
    SUPERVISOR,
    Ledger,
    Supervision,
    Survivor,
    descendants,
    spawn,
    survivors,
    sweep,
    sweep_ledgers,
)
from orchestrator.adapters.procs.supervisor import CGROUP_PREFIX, proc_stat
from tests.processes import (
    cgroup_writable,
    gone,
    join,
    kill_all,
    private_cgroup,
    unique_seconds,
    wait_running,
)

ROOT = Path(__file__).resolve().parents[4]
STAND_IN = Path(__file__).with_name("stand_in_pod.py")


CGROUP = cgroup_writable()


@pytest.fixture(params=["proc", "cgroup"])
def cgroup(request: pytest.FixtureRequest) -> bool:
    """Each test once with /proc tracking alone, and once with a cgroup where there is one."""
    if request.param == "cgroup" and not CGROUP:
        pytest.skip("no writable cgroup v2 hierarchy here")
    return bool(request.param == "cgroup")


@pytest.fixture
def marker() -> Iterator[int]:
    seconds = unique_seconds()
    yield seconds
    kill_all(f"sleep {seconds}")
    kill_all(f"sleep {seconds + 1}")


def _detached_job(seconds: int) -> str:
    """A shell that starts a setsid child, then waits (as `sleep 300; setsid sleep 301 &`,
    but in the order that gets both running)."""
    return f"setsid sleep {seconds + 1} & sleep {seconds}"


def _recorded(report: Path) -> set[int]:
    try:
        return {entry["pid"] for entry in json.loads(report.read_text())["processes"]}
    except FileNotFoundError:
        return set()


def _stand_in_pod(command: str, cgroup: bool) -> tuple[subprocess.Popen[bytes], int]:
    pod = subprocess.Popen(
        [sys.executable, str(STAND_IN), "0.2", "1" if cgroup else "0", "/bin/bash", "-c", command],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
    )
    assert pod.stdout is not None
    return pod, int(pod.stdout.readline())


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM, signal.SIGHUP])
def test_everything_ends_when_the_pod_dies(cgroup: bool, marker: int, how: int) -> None:
    pod, _ = _stand_in_pod(_detached_job(marker), cgroup)
    try:
        wait_running(f"sleep {marker}", 1)
        wait_running(f"sleep {marker + 1}", 1)
        os.kill(pod.pid, how)
        pod.wait(10)
        assert gone(f"sleep {marker}"), "the command outlived its pod"
        assert gone(f"sleep {marker + 1}"), "the setsid child outlived its pod"
    finally:
        pod.kill()
        pod.wait()


def test_an_orphaned_setsid_child_is_still_found(cgroup: bool, marker: int) -> None:
    # The shell exits at once: its setsid grandchild is re-parented to the supervisor (a
    # subreaper), not to init, so /proc alone still leads to it.
    pod, supervisor = _stand_in_pod(f"(setsid sleep {marker} &)", cgroup)
    try:
        [orphan] = wait_running(f"sleep {marker}", 1)
        deadline = time.monotonic() + 5
        while orphan not in descendants(supervisor):
            assert time.monotonic() < deadline, "the orphan was never re-parented"
            time.sleep(0.02)
        os.kill(pod.pid, signal.SIGKILL)
        pod.wait(10)
        assert gone(f"sleep {marker}")
    finally:
        pod.kill()
        pod.wait()


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
async def test_a_signal_to_the_supervisor_ends_everything(
    cgroup: bool, marker: int, how: int
) -> None:
    supervised = await spawn(
        ["/bin/bash", "-c", f"trap '' TERM; {_detached_job(marker)}"],
        Supervision(grace_s=0.2, cgroup=cgroup),
    )
    wait_running(f"sleep {marker}", 1)
    wait_running(f"sleep {marker + 1}", 1)
    supervised.process.send_signal(how)
    await asyncio.wait_for(supervised.process.wait(), 10)
    # The shell ignores SIGTERM (and so do its sleeps): only SIGKILL after the grace ends them.
    assert gone(f"sleep {marker}") and gone(f"sleep {marker + 1}")
    assert await supervised.exited() == -signal.SIGKILL


_LATE_ZOMBIE = """
import os, signal, sys, time
from orchestrator.adapters.procs.supervisor import Options, Supervisor, proc_stat


class LastRoundMissedIt(Supervisor):
    def tracked(self):
        return []  # the window: nothing alive, the command a zombie nobody reaped yet


options = Options()
options.status_fd, options.no_cgroup, options.grace = int(sys.argv[1]), True, 0.0
supervisor = LastRoundMissedIt(options)
supervisor.start(["sleep", "60"])
os.kill(supervisor.main, signal.SIGKILL)
while proc_stat(supervisor.main)[0] != "Z":
    time.sleep(0.005)
supervisor.finish(129)
"""


def test_a_command_that_died_in_the_last_kill_round_still_has_its_code_reported() -> None:
    # CI met it: a kill round looked at /proc just after the command became a zombie, saw
    # nothing alive, and the supervisor exited without reporting the command's code.
    read_fd, write_fd = os.pipe()
    try:
        done = subprocess.run(
            [sys.executable, "-c", _LATE_ZOMBIE, str(write_fd)],
            pass_fds=(write_fd,),
            cwd=Path(__file__).resolve().parents[4],
            capture_output=True,
            timeout=30,
        )
        os.close(write_fd)
        write_fd = -1
        with os.fdopen(read_fd, "rb") as status:
            read_fd = -1
            said = status.read()
    finally:
        for fd in (read_fd, write_fd):
            if fd >= 0:
                os.close(fd)
    assert done.returncode == 129, done.stderr.decode()
    assert said == f"exit {-signal.SIGKILL}\n".encode()


async def test_the_exit_code_is_reported_and_leftovers_end_with_the_command(
    cgroup: bool, marker: int
) -> None:
    supervised = await spawn(
        ["/bin/bash", "-c", f"setsid sleep {marker} >/dev/null 2>&1 & exit 3"],
        Supervision(grace_s=0.2, cgroup=cgroup),
        stdout=asyncio.subprocess.PIPE,
    )
    assert await asyncio.wait_for(supervised.exited(), 10) == 3
    assert await asyncio.wait_for(supervised.process.wait(), 10) == 3
    assert gone(f"sleep {marker}")


async def test_lingering_background_jobs_run_until_ended(cgroup: bool, marker: int) -> None:
    supervised = await spawn(
        ["/bin/bash", "-c", f"setsid sleep {marker} >/dev/null 2>&1 & echo started"],
        Supervision(grace_s=0.2, linger=True, cgroup=cgroup),
        stdout=asyncio.subprocess.PIPE,
    )
    assert supervised.process.stdout is not None
    assert await supervised.process.stdout.read() == b"started\n"
    assert await asyncio.wait_for(supervised.exited(), 10) == 0
    [job] = wait_running(f"sleep {marker}", 1)
    await asyncio.sleep(0.3)
    assert supervised.process.returncode is None and job in descendants(supervised.process.pid)
    await supervised.close()
    assert gone(f"sleep {marker}")


async def test_a_lingering_supervisor_exits_after_its_last_job(cgroup: bool) -> None:
    supervised = await spawn(
        ["/bin/bash", "-c", "sleep 0.3 >/dev/null 2>&1 &"],
        Supervision(linger=True, cgroup=cgroup),
    )
    assert await asyncio.wait_for(supervised.exited(), 10) == 0
    assert await asyncio.wait_for(supervised.process.wait(), 10) == 0


def test_survivors_are_named_when_the_supervisor_is_killed_while_ending(
    tmp_path: Path, marker: int
) -> None:
    # A job that ignores SIGTERM gets the whole grace; killing the supervisor in it leaves
    # the job running, and the report file naming it.
    report = tmp_path / "report.json"
    supervision = Supervision(grace_s=30, cgroup=False, report=report)
    command = f"trap '' TERM; setsid sleep {marker} & wait"
    supervisor = subprocess.Popen(
        supervision.argv(["/bin/bash", "-c", command]), start_new_session=True
    )
    try:
        [job] = wait_running(f"sleep {marker}", 1)
        assert survivors(report) == []  # nothing to report while it runs
        supervisor.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 120  # generous: a busy machine starts the report late
        while not report.exists():
            assert time.monotonic() < deadline
            time.sleep(0.02)
        supervisor.kill()
        supervisor.wait(10)
        # The ignored SIGTERM is inherited: the sleep is still there, and named.
        named = {s.pid: s.command for s in survivors(report)}
        assert named.get(job) == f"sleep {marker}"
    finally:
        supervisor.kill()
        supervisor.wait()


async def test_the_report_file_goes_once_everything_ended(tmp_path: Path, marker: int) -> None:
    report = tmp_path / "report.json"
    supervised = await spawn(
        ["/bin/bash", "-c", _detached_job(marker)], Supervision(grace_s=0.2, report=report)
    )
    wait_running(f"sleep {marker + 1}", 1)
    await supervised.close()
    assert not report.exists() and survivors(report) == []


@pytest.mark.skipif(not CGROUP, reason="no writable cgroup v2 hierarchy here")
def test_sweep_ends_what_a_killed_supervisor_left_in_its_cgroup(marker: int) -> None:
    with private_cgroup() as group:
        supervision = Supervision(grace_s=0.2, cgroup=True)
        supervisor = subprocess.Popen(
            supervision.argv(["/bin/bash", "-c", _detached_job(marker)]),
            start_new_session=True,
            preexec_fn=join(group),
        )
        try:
            jobs = set(wait_running(f"sleep {marker}", 1) + wait_running(f"sleep {marker + 1}", 1))
            assert sweep(group) == []  # a live supervisor's are its own
            supervisor.kill()  # no chance to end anything
            supervisor.wait(10)
            assert set(wait_running(f"sleep {marker + 1}", 1)) <= jobs  # left running
            ended = {s.pid for s in sweep(group)}
            assert jobs <= ended
            assert gone(f"sleep {marker}") and gone(f"sleep {marker + 1}")
            assert [p for p in group.iterdir() if p.name.startswith(CGROUP_PREFIX)] == []
        finally:
            supervisor.kill()
            supervisor.wait()


async def test_what_outlives_a_killed_supervisor_is_named(
    cgroup: bool, marker: int, tmp_path: Path
) -> None:
    with private_cgroup() if cgroup else contextlib.nullcontext(None) as group:
        await _kill_and_name_survivors(marker, tmp_path / "report.json", cgroup, group)


async def _kill_and_name_survivors(
    marker: int, report: Path, cgroup: bool, group: Path | None
) -> None:
    # In a cgroup of the test's own: a pod of a parallel test would sweep one left in ours.
    supervised = await spawn(
        ["/bin/bash", "-c", _detached_job(marker)],
        Supervision(grace_s=0.2, report=report, cgroup=cgroup),
        preexec_fn=join(group) if group is not None else None,
    )
    jobs = set(wait_running(f"sleep {marker}", 1) + wait_running(f"sleep {marker + 1}", 1))
    assert survivors(report) == []  # its supervisor answers for them
    # The record is kept up to date while the command runs.
    deadline = time.monotonic() + 5
    while not jobs <= _recorded(report):
        assert time.monotonic() < deadline, "the record never named the command's processes"
        await asyncio.sleep(0.05)
    supervised.process.kill()  # no chance to end anything
    await supervised.process.wait()
    named = {s.pid: s.command for s in survivors(report)}
    assert jobs <= set(named)
    assert {named[pid] for pid in jobs} == {f"sleep {marker}", f"sleep {marker + 1}"}


async def test_main_first_gives_the_command_its_grace_before_the_rest(
    cgroup: bool, marker: int, tmp_path: Path
) -> None:
    # The command (a pod, say) ends what it started in its own way: when its SIGTERM handler
    # runs, its child has not been signalled yet. Then the rest ends all the same.
    seen = tmp_path / "seen"
    command = (
        f"sleep {marker} & child=$!; setsid sleep {marker + 1} & "
        f"trap 'kill -0 $child && echo untouched > {seen}; exit 0' TERM; wait"
    )
    supervised = await spawn(
        ["/bin/bash", "-c", command], Supervision(grace_s=5, main_first=True, cgroup=cgroup)
    )
    await asyncio.to_thread(wait_running, f"sleep {marker + 1}", 1)
    await asyncio.to_thread(wait_running, f"sleep {marker}", 1)
    await supervised.close()
    assert seen.read_text() == "untouched\n"
    assert await supervised.exited() == 0
    assert gone(f"sleep {marker}") and gone(f"sleep {marker + 1}")


@pytest.mark.parametrize(
    "argv",
    [[], ["--parent", "1"], ["--parent", "1", "--"], ["--parent", "x", "--", "true"],
     ["--grace"], ["--bogus", "--", "true"], ["--", "true"]],
)  # fmt: skip
def test_a_bad_command_line_is_the_usage_and_exit_2(argv: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-I", "-S", str(SUPERVISOR), *argv], capture_output=True, text=True
    )
    assert (done.returncode, done.stderr.split(" ", 2)[:2]) == (2, ["usage:", "supervisor.py"])


def test_the_supervisor_runs_on_the_standard_library_alone() -> None:
    # It starts for every command: no pydantic, no site, nothing of the pod's own imports.
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-X", "importtime", str(SUPERVISOR), "--parent", "1"],
        capture_output=True,
        text=True,
    )
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if "|" in line}
    assert "orchestrator" not in " ".join(imported) and "pydantic" not in imported
    assert {"argparse", "dataclasses", "pathlib", "json"}.isdisjoint(imported)


def test_sweep_ledgers_ends_what_a_dead_pods_records_name(tmp_path: Path, marker: int) -> None:
    orphan = subprocess.Popen(["sleep", str(marker)])
    try:
        stat = proc_stat(orphan.pid)
        assert stat is not None
        dead = {"pid": 2**22 + 1, "started": 1}  # above pid_max: no such process
        record = {
            "supervisor": dead,
            "cgroup": None,
            "processes": [{"pid": orphan.pid, "started": stat[2], "command": f"sleep {marker}"}],
        }
        ledger = Ledger.open(tmp_path)  # ours: alive, so never swept
        (ledger.directory / "bash-0.json").write_text(json.dumps(record))
        assert sweep_ledgers(tmp_path) == [] and ledger.directory.exists()
        gone_pod = tmp_path / f"{dead['pid']}.1"
        gone_pod.mkdir()
        (gone_pod / "bash-0.json").write_text(json.dumps(record))
        assert sweep_ledgers(tmp_path) == [Survivor(pid=orphan.pid, command=f"sleep {marker}")]
        assert orphan.wait(5) == -signal.SIGKILL
        assert not gone_pod.exists()
        # A pid used again is never taken for a survivor: the start time differs (here the
        # pid is this test's own).
        gone_pod.mkdir()
        reused = {**record, "processes": [{"pid": os.getpid(), "started": 1, "command": "x"}]}
        (gone_pod / "bash-0.json").write_text(json.dumps(reused))
        assert sweep_ledgers(tmp_path) == []
        assert not gone_pod.exists()
    finally:
        orphan.kill()
        orphan.wait()


@pytest.mark.skipif(not CGROUP, reason="no writable cgroup v2 hierarchy here")
def test_sweep_removes_a_dead_supervisors_cgroup_with_nested_ones() -> None:
    """A supervised pod's own supervisors make their cgroups inside its one: left behind,
    the outer one could never be removed, and every later pod start retried it."""
    with private_cgroup() as group:
        dead = group / f"{CGROUP_PREFIX}999999.1"  # no such process: its supervisor is gone
        inner = dead / f"{CGROUP_PREFIX}999998.1"
        inner.mkdir(parents=True)
        (inner / f"{CGROUP_PREFIX}999997.1").mkdir()
        assert sweep(group) == []
        assert not dead.exists()


def test_the_pods_of_one_host_keep_ledgers_of_their_own(tmp_path: Path) -> None:
    first, second = Ledger.open(tmp_path, "a"), Ledger.open(tmp_path, "b")
    assert first.directory.parent == second.directory.parent  # the host process's folder
    kept = second.record("bash")
    kept.write_text("{}")
    first.record("bash").write_text("{}")
    first.close()  # one pod unloaded: the other's records stay
    assert kept.exists() and not first.directory.exists()
    second.close()
    assert not second.directory.parent.exists()  # the last one takes the process's folder
