"""Supervised processes: nothing the pod starts outlives it.

Every process the pod does not fully control (a ``bash`` command, a stdio MCP server, a pod
that ``pod acp`` starts) runs under :mod:`.supervisor`, which ends it and everything it
started, ``setsid`` children included, when the pod dies (even by ``kill -9``) or asks.
It reads ``/proc`` and cgroups through :mod:`.kernel` and filters an MCP server's stdout
with :mod:`.relay`; both are standard library only, as it is.

- :class:`Supervision` says how (grace, linger, report file) and gives the command line,
  for callers whose library starts the process itself (the MCP SDK).
- :func:`spawn` starts a command under supervision with asyncio and returns a
  :class:`Supervised`: the command's exit code, and one call to end it all.
- :class:`Keeper` holds commands whose background jobs outlive the call (``--linger``) and
  ends them together when their owner stops.
- :mod:`.leftovers`: what outlives a supervisor that was killed itself. :func:`survivors`
  reads a supervisor's record; a :class:`Ledger` keeps one pod's records, and
  :func:`sweep_ledgers` and :func:`sweep` (cgroups) end what a dead pod's supervisors left.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.adapters.procs.kernel import descendants
from orchestrator.adapters.procs.leftovers import Ledger, Survivor, survivors, sweep, sweep_ledgers

__all__ = [
    "Keeper",
    "Ledger",
    "Supervised",
    "Supervision",
    "Survivor",
    "descendants",
    "spawn",
    "survivors",
    "sweep",
    "sweep_ledgers",
]

SUPERVISOR = Path(__file__).with_name("supervisor.py")


def cgroups_allowed() -> bool:
    """Whether supervisors may put commands in a cgroup; ``POD_PROCS_CGROUP=0`` turns it off
    (the tests of the record-only path, machines where cgroups are someone else's to manage)."""
    return os.environ.get("POD_PROCS_CGROUP", "1") != "0"


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
    cgroup: bool | None = None
    """Run the command in a cgroup of its own where one can be made; None: unless
    ``POD_PROCS_CGROUP=0`` (read when the command starts)."""
    kill_on_parent_death: bool = False
    """When the pod dies (even by ``kill -9``), SIGKILL the command at once instead of
    SIGTERM and the grace (a child pod: it must stop as if it crashed, resumable)."""
    json_stdout: bool = False
    """The command speaks JSON lines on stdout (an MCP server): lines that cannot be JSON-RPC
    are dropped after the first few, and counted on stderr."""

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
        if self.json_stdout:
            args.append("--json-stdout")
        if self.kill_on_parent_death:
            args.append("--kill-on-parent-death")
        if not (cgroups_allowed() if self.cgroup is None else self.cgroup):
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
