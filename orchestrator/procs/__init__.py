"""Supervised processes: nothing the pod starts outlives it.

Every process the pod does not fully control (a ``bash`` command, a stdio MCP server, a pod
that ``pod acp`` starts) runs under :mod:`.supervisor`, which ends it and everything it
started, ``setsid`` children included, when the pod dies (even by ``kill -9``) or asks.

- :class:`Supervision` says how (grace, linger, report file) and gives the command line,
  for callers whose library starts the process itself (the MCP SDK).
- :func:`spawn` starts a command under supervision with asyncio and returns a
  :class:`Supervised`: the command's exit code, and one call to end it all.
- :class:`Keeper` holds commands whose background jobs outlive the call (``--linger``) and
  ends them together when their owner stops.
- :func:`survivors` reads what a supervisor could not end; :func:`sweep` ends what the
  supervisors of a dead pod left in their cgroups, and says what it found.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.procs.supervisor import (
    CGROUP_PREFIX,
    alive,
    cgroup_members,
    command_line,
    descendants,
    kill_cgroup,
    own_cgroup_dir,
    remove_cgroup,
)

__all__ = [
    "Keeper",
    "Supervised",
    "Supervision",
    "Survivor",
    "descendants",
    "spawn",
    "survivors",
    "sweep",
]

SUPERVISOR = Path(__file__).with_name("supervisor.py")

USE_CGROUP = os.environ.get("POD_PROCS_CGROUP", "1") != "0"
"""Whether supervisors may put commands in a cgroup; ``POD_PROCS_CGROUP=0`` turns it off (the
tests of the /proc-only path, machines where cgroups are someone else's to manage)."""


@dataclass(frozen=True)
class Supervision:
    """How a command is supervised."""

    grace_s: float = 1.0
    """Between SIGTERM and SIGKILL when the command is ended."""
    linger: bool = False
    """Keep the command's leftovers (background jobs) running after it exits, until they end
    or the supervisor is told to end them; otherwise they end with the command."""
    main_first: bool = False
    """When ending: SIGTERM the command alone first and give it the grace to end what it
    started in its own way, before the rest are signalled (for a pod, which shuts down
    cleanly)."""
    report: Path | None = None
    """Where the supervisor records what it answers for, so that :func:`survivors` can name
    what outlives it."""
    cgroup: bool = USE_CGROUP

    def argv(self, command: Sequence[str], *, status_fd: int | None = None) -> list[str]:
        """The command line that runs ``command`` under a supervisor whose parent is this
        process; the caller must start it from this thread (the death signal is the thread's)."""
        # -I -S: the standard library alone, whatever PYTHONPATH the command's environment
        # sets, and without site's start-up cost.
        args = [sys.executable, "-I", "-S", str(SUPERVISOR), "--parent", str(os.getpid())]
        args += ["--grace", f"{self.grace_s:g}"]
        if self.linger:
            args.append("--linger")
        if self.main_first:
            args.append("--main-first")
        if status_fd is not None:
            args += ["--status-fd", str(status_fd)]
        if self.report is not None:
            args += ["--report", str(self.report)]
        if not self.cgroup:
            args.append("--no-cgroup")
        return [*args, "--", *command]


@dataclass(eq=False)
class Supervised:
    """A command running under its supervisor (see :func:`spawn`)."""

    process: asyncio.subprocess.Process
    """The supervisor; its stdout and stderr are the command's."""
    supervision: Supervision
    _status: asyncio.Future[int | None]
    _watch: asyncio.Task[None] | None = None

    @property
    def code(self) -> int | None:
        """The command's exit code once it exited (negative: killed by that signal)."""
        if self._status.done() and not self._status.cancelled():
            return self._status.result()
        return None

    async def exited(self) -> int | None:
        """Wait for the command to exit; its code, or None if the supervisor died first."""
        return await asyncio.shield(self._status)

    def end(self) -> None:
        """Tell the supervisor to end the command and everything it started."""
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.send_signal(signal.SIGTERM)

    async def close(self) -> None:
        """End it all and wait for the supervisor; a supervisor that hangs is killed."""
        self.end()
        try:
            await asyncio.wait_for(self.process.wait(), self.supervision.grace_s + 5.0)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)
            await self.process.wait()


_lingering: set[asyncio.Task[Any]] = set()


@dataclass
class Keeper:
    """Commands whose background jobs run on after the call that started them, until they
    end by themselves or their owner stops (a pod's shutdown)."""

    _kept: dict[Supervised, asyncio.Task[Any]] = field(default_factory=dict)

    def keep(self, supervised: Supervised) -> None:
        """Answer for ``supervised`` until its supervisor exits."""
        if supervised.process.returncode is not None or supervised in self._kept:
            return
        waiting = asyncio.create_task(supervised.process.wait())
        waiting.add_done_callback(lambda _: self._kept.pop(supervised, None))
        self._kept[supervised] = waiting

    def __len__(self) -> int:
        return len(self._kept)

    async def close(self) -> None:
        """End every kept command and what it started."""
        kept = list(self._kept)
        await asyncio.gather(*(supervised.close() for supervised in kept))
        for task in list(self._kept.values()):
            task.cancel()
        self._kept.clear()


async def spawn(command: Sequence[str], supervision: Supervision, **popen: Any) -> Supervised:
    """Start ``command`` under a supervisor (``popen``: asyncio's subprocess options).

    The supervisor leads a new session, so a terminal's Ctrl-C never reaches it; raises
    OSError when it cannot be started.
    """
    loop = asyncio.get_running_loop()
    read_fd, write_fd = os.pipe()
    try:
        process = await asyncio.create_subprocess_exec(
            *supervision.argv(command, status_fd=write_fd),
            pass_fds=(write_fd,),
            start_new_session=True,
            **popen,
        )
    except BaseException:
        os.close(read_fd)
        raise
    finally:
        os.close(write_fd)
    status: asyncio.Future[int | None] = loop.create_future()
    supervised = Supervised(process=process, supervision=supervision, _status=status)
    task = asyncio.create_task(_watch(read_fd, status), name=f"supervised-{process.pid}")
    supervised._watch = task
    _lingering.add(task)
    task.add_done_callback(_lingering.discard)
    return supervised


async def _watch(read_fd: int, status: asyncio.Future[int | None]) -> None:
    """Read the supervisor's ``exit CODE`` line into ``status``."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(read_fd, "rb", buffering=0)
    )
    try:
        line = await reader.readline()
    finally:
        transport.close()
    code: int | None = None
    with contextlib.suppress(ValueError):
        verb, value = line.decode().split()
        code = int(value) if verb == "exit" else None
    if not status.done():
        status.set_result(code)


@dataclass(frozen=True)
class Survivor:
    """A process that outlived the supervisor meant to end it."""

    pid: int
    command: str = ""


def survivors(report: Path) -> list[Survivor]:
    """What still runs of the processes a supervisor answered for, once the supervisor is
    gone; none while it runs (it answers for them) or when its report file is absent (it
    ended them all)."""
    try:
        data = json.loads(report.read_text(encoding="utf-8"))
        boss = data["supervisor"]
        if alive(int(boss["pid"]), int(boss["started"])):
            return []
        entries = list(data["processes"])
        group = str(data["cgroup"]) if data.get("cgroup") else None
    except (OSError, ValueError, KeyError, TypeError):
        return []
    found: dict[int, Survivor] = {}
    for entry in entries:
        with contextlib.suppress(KeyError, TypeError, ValueError):
            pid, started = int(entry["pid"]), int(entry["started"])
            if alive(pid, started):
                found[pid] = Survivor(pid=pid, command=str(entry.get("command", "")))
    for pid in cgroup_members(group) if group is not None else []:
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
