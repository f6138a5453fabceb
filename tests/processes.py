"""Finding test processes by a unique marker on their command line, and waiting for them.

Each test makes its own marker (an unlikely ``sleep`` duration), so tests running in parallel
never see each other's processes."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

from orchestrator.adapters.procs.supervisor import (
    CGROUP_PREFIX,
    kill_cgroup,
    own_cgroup_dir,
    remove_cgroup,
)


def unique_seconds() -> int:
    """A ``sleep`` duration no other test uses: its command line is the marker."""
    return 700_000 + secrets.randbelow(200_000)


def running(marker: str) -> list[int]:
    """The live processes whose command line is ``marker`` (zombies left out)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").strip()
            state = Path(f"/proc/{entry}/stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            continue
        if cmdline == marker.encode() and state != "Z":
            found.append(int(entry))
    return found


def wait_running(marker: str, count: int, within_s: float = 10.0) -> list[int]:
    """Wait until ``count`` processes with ``marker`` run; their pids."""
    deadline = time.monotonic() + within_s
    while len(found := running(marker)) < count:
        assert time.monotonic() < deadline, f"{count} processes with {marker!r} never ran"
        time.sleep(0.02)
    return found


def gone(marker: str, within_s: float = 5.0) -> bool:
    """Whether every process with ``marker`` has ended within ``within_s``."""
    deadline = time.monotonic() + within_s
    while running(marker):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def kill_all(marker: str) -> None:
    """Clean up after a failed test."""
    for pid in running(marker):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, 9)


def cgroup_writable() -> bool:
    """Whether supervisors can make cgroups here (cgroup v2, and the right to)."""
    own = own_cgroup_dir()
    if own is None:
        return False
    probe = Path(own) / f"{CGROUP_PREFIX}probe.{uuid.uuid4().hex}"
    try:
        probe.mkdir()
    except OSError:
        return False
    probe.rmdir()
    return True


@contextlib.contextmanager
def private_cgroup() -> Iterator[Path]:
    """A cgroup of the test's own, so that what its supervisors leave is swept only by the
    pods it starts in it (:func:`join`), never by another test's pod running in parallel."""
    own = own_cgroup_dir()
    assert own is not None
    group = Path(own) / f"pod-test.{uuid.uuid4().hex}"
    group.mkdir()
    try:
        yield group
    finally:
        for child in [group, *group.iterdir()]:
            if child.is_dir():
                kill_cgroup(str(child))
        for child in group.iterdir():
            if child.is_dir():
                remove_cgroup(str(child))
        remove_cgroup(str(group))


def join(group: Path) -> Callable[[], None]:
    """A ``preexec_fn`` that starts a process in ``group``."""

    def preexec() -> None:
        (group / "cgroup.procs").write_text("0")

    return preexec


def recorded_by(supervisor: int) -> set[int]:
    """The pids a supervisor's record names (the file its ``--report`` option gives)."""
    args = Path(f"/proc/{supervisor}/cmdline").read_bytes().split(b"\0")
    report = Path(args[args.index(b"--report") + 1].decode())
    try:
        return {entry["pid"] for entry in json.loads(report.read_text())["processes"]}
    except (FileNotFoundError, ValueError):
        return set()


def wait_recorded(supervisor: int, pids: set[int], within_s: float = 5.0) -> None:
    """Wait until the supervisor's record names ``pids`` (it is refreshed every second)."""
    deadline = time.monotonic() + within_s
    while not pids <= recorded_by(supervisor):
        assert time.monotonic() < deadline, f"the supervisor never recorded {pids}"
        time.sleep(0.05)
