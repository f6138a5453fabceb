"""What outlives a supervisor: only a supervisor killed itself (a ``kill -9`` of its process
group, the OOM killer) leaves processes running, unsupervised. They are found two ways:

- the supervisor's **record** (``--report``), refreshed while its command runs, names them
  (:func:`survivors`); a pod keeps its supervisors' records in a :class:`Ledger`, and the
  next pod ends what a dead pod's records still name (:func:`sweep_ledgers`);
- the supervisor's **cgroup**, where there is one, still holds them (:func:`sweep`).

Processes are named by pid and start time, so a pid used again by another process is never
taken for a survivor.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import shutil
import signal
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.adapters.procs.kernel import (
    CGROUP_PREFIX,
    alive,
    cgroup_members,
    command_line,
    kill_cgroup,
    own_cgroup_dir,
    proc_stat,
    remove_cgroup,
)


@dataclass(frozen=True)
class Survivor:
    """A process that outlived the supervisor meant to end it."""

    pid: int
    command: str = ""


@dataclass(frozen=True)
class _Record:
    """A supervisor's record, as :mod:`.supervisor` writes it."""

    supervisor: tuple[int, int]
    cgroup: str | None
    processes: list[Survivor]
    started: dict[int, int]

    @property
    def supervised(self) -> bool:
        """Its supervisor still runs, and answers for its processes."""
        return alive(*self.supervisor)


def _record(report: Path) -> _Record | None:
    """The record at ``report``; None when there is none (or it is not one)."""
    try:
        data = json.loads(report.read_text(encoding="utf-8"))
        boss = data["supervisor"]
        processes, started = [], {}
        for entry in data["processes"]:
            pid = int(entry["pid"])
            started[pid] = int(entry["started"])
            processes.append(Survivor(pid=pid, command=str(entry.get("command", ""))))
        cgroup = data.get("cgroup")
        return _Record(
            supervisor=(int(boss["pid"]), int(boss["started"])),
            cgroup=cgroup if isinstance(cgroup, str) else None,
            processes=processes,
            started=started,
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def survivors(report: Path) -> list[Survivor]:
    """What still runs of the processes a supervisor answered for, once the supervisor is
    gone; none while it runs (it answers for them) or when its report file is absent (it
    ended them all)."""
    record = _record(report)
    if record is None or record.supervised:
        return []
    found = {p.pid: p for p in record.processes if alive(p.pid, record.started[p.pid])}
    for pid in cgroup_members(record.cgroup) if record.cgroup is not None else []:
        if pid not in found and alive(pid):
            found[pid] = Survivor(pid=pid, command=command_line(pid))
    return sorted(found.values(), key=lambda survivor: survivor.pid)


def sweep(base: Path | None = None) -> list[Survivor]:
    """End the processes left in the cgroups of supervisors that are gone (killed before
    they could end their commands), and remove those cgroups. ``base`` defaults to our own
    cgroup, where our supervisors make theirs."""
    swept: list[Survivor] = []
    if base is None:
        own = own_cgroup_dir()
        if own is None:
            return swept
        base = Path(own)
    try:
        groups = [p for p in base.iterdir() if p.name.startswith(CGROUP_PREFIX)]
    except OSError:
        return swept
    for group in groups:
        try:
            pid, started = (int(part) for part in group.name[len(CGROUP_PREFIX) :].split("."))
        except ValueError:
            continue
        if alive(pid, started):
            continue  # its supervisor still answers for it
        for member in cgroup_members(str(group)):
            swept.append(Survivor(pid=member, command=command_line(member)))
        kill_cgroup(str(group))
        remove_cgroup(str(group))
    return swept


_PROCESS_DIR = re.compile(r"\d+\.\d+")
"""A process's ledger folder: ``<pid>.<start time>``."""


@dataclass
class Ledger:
    """Where one pod's supervisors keep their records: ``<root>/<pod pid>.<start time>/``,
    removed when the pod stops; one left behind is a dead pod's (:func:`sweep_ledgers`)."""

    directory: Path
    _numbers: itertools.count[int] = field(default_factory=itertools.count)

    @classmethod
    def open(cls, root: Path, owner: str = "") -> Ledger:
        """This process's ledger under ``root`` (a private directory); ``owner`` (a pod's
        name) gives each pod of a process that serves many its own, closed with it."""
        stat = proc_stat(os.getpid())
        directory = root / f"{os.getpid()}.{stat[2] if stat else 0}"
        if owner:
            directory = directory / owner
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        return cls(directory=directory)

    def record(self, label: str) -> Path:
        """A new record's path, for one supervisor."""
        return self.directory / f"{label}-{next(self._numbers)}.json"

    def close(self) -> None:
        """The pod stops, its supervisors are done: drop the records (and the process's
        folder, once no other pod of it has a ledger there)."""
        shutil.rmtree(self.directory, ignore_errors=True)
        if not _PROCESS_DIR.fullmatch(self.directory.name):
            with contextlib.suppress(OSError):
                self.directory.parent.rmdir()  # only when empty


def _still_supervised(report: Path) -> bool:
    record = _record(report)
    return record is not None and record.supervised


def sweep_ledgers(root: Path) -> list[Survivor]:
    """End what the records of dead pods (their ledgers under ``root``) still name, and
    remove those ledgers; returns what was ended."""
    ended: list[Survivor] = []
    try:
        ledgers = [path for path in root.iterdir() if path.is_dir()]
    except OSError:
        return ended
    for ledger in ledgers:
        try:
            pid, started = (int(part) for part in ledger.name.split("."))
        except ValueError:
            continue
        if alive(pid, started):
            continue  # a live pod (or host) answers for its own: no need to read its records
        records = sorted(ledger.rglob("*.json"))  # a host's pods each have a folder
        if any(_still_supervised(record) for record in records):
            continue  # a supervisor still ending things answers for them
        for record in records:
            for survivor in survivors(record):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(survivor.pid, signal.SIGKILL)
                ended.append(survivor)
        shutil.rmtree(ledger, ignore_errors=True)
    return ended
