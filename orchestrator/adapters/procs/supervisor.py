"""Run a command so that it and everything it starts end with the pod:
``python …/supervisor.py [options] -- COMMAND ARGS…``.

The pod starts every process it does not fully control (a ``bash`` command, a stdio MCP
server) under this small supervisor, which stays the command's parent for its whole life:

- **It knows every descendant.** It is a child subreaper (``PR_SET_CHILD_SUBREAPER``), so a
  process whose parent exits, including one that called ``setsid`` or forked twice to
  "daemonize", is re-parented to the supervisor instead of to init: walking ``/proc`` down
  from the supervisor finds them all. Where a cgroup v2 hierarchy is writable (root, or a
  delegated subtree), the command also runs in a cgroup of its own, ``pod-procs.<pid>``,
  which keeps the record even if the supervisor itself is killed; the pod ends such
  leftovers at its next start (:func:`orchestrator.adapters.procs.sweep`).
- **It dies with the pod.** The kernel sends it SIGUSR1 when the pod exits, however it
  exits, ``kill -9`` included (``PR_SET_PDEATHSIG``).
- **Ending is one signal.** SIGTERM, SIGHUP, SIGINT or the pod's death make it end every
  descendant: SIGTERM, up to ``--grace`` seconds to exit, then SIGKILL until none is left.
  With ``--kill-on-parent-death`` the pod's death skips the SIGTERM and the grace: a child
  pod then dies as its parent did, its session cut off mid-turn and resumable, instead of
  shutting down cleanly (which would close its turn).
  With ``--main-first`` the command alone gets the SIGTERM and the grace first, to end what
  it started in its own way (a pod stops its commands and closes its session); the rest
  then get ``MAIN_FIRST_REST_S``.
- **When the command exits** it reports the exit code on ``--status-fd`` (``exit CODE``), and
  then either ends what the command left behind and exits with its code (the default: an
  MCP server's helpers go with it), or, with ``--linger``, stays while the command's
  background jobs run, and exits when the last one does (a ``bash`` command's
  ``server > log &`` keeps running until the pod stops or the command is cancelled).
- With ``--report PATH``, it keeps a record there (rewritten every ``REPORT_EVERY_S`` while
  the set changes, and just before it ends them): itself, its cgroup, and the processes it
  answers for. The file is removed once all have ended, so one whose supervisor is gone
  names survivors (the supervisor was killed, or a process would not die):
  :func:`orchestrator.adapters.procs.survivors` reads it.

The command inherits stdin, stdout and stderr; the supervisor lets go of its own copies so the
pipes close when the command's side of them does. With ``--json-stdout`` (an MCP server) the
command's stdout goes through the supervisor instead, which passes on the lines that can be
JSON-RPC (they start with ``{`` or ``[``) and drops the rest but the first
``NOISE_PASSED`` (so the pod can name the fault), with a count on stderr: a server that prints
megabytes of progress on stdout costs the pod a few lines, not a parse and an event-loop turn
per line. It imports only the standard library and
runs by its path with ``-I -S`` (about 10 ms and 9 MB per command; joining a cgroup adds
about 15 ms on this kernel).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time
from collections.abc import Iterator
from types import FrameType

TYPE_CHECKING = False  # typing itself costs a supervisor's start; mypy reads the name alone
if TYPE_CHECKING or __package__:
    from orchestrator.adapters.procs.kernel import (
        CGROUP_PREFIX,
        alive,
        cgroup_members,
        command_line,
        descendants,
        exited,
        kill_cgroup,
        make_cgroup,
        own_cgroup_dir,
        proc_stat,
        remove_cgroup,
        signal_quietly,
        write_text,
    )
    from orchestrator.adapters.procs.relay import NOISE_PASSED, LineFilter, StdoutRelay
else:
    # Run by its path with -I -S (how the pod runs it): the package is not importable, and
    # must not be (its __init__ imports asyncio); these siblings are standard library only.
    # Appended, so that nothing in this folder can shadow a standard module.
    sys.path.append(os.path.dirname(os.path.abspath(__file__)))
    from kernel import (
        CGROUP_PREFIX,
        alive,
        cgroup_members,
        command_line,
        descendants,
        exited,
        kill_cgroup,
        make_cgroup,
        own_cgroup_dir,
        proc_stat,
        remove_cgroup,
        signal_quietly,
        write_text,
    )
    from relay import NOISE_PASSED, LineFilter, StdoutRelay

__all__ = [
    "CGROUP_PREFIX",
    "NOISE_PASSED",
    "LineFilter",
    "Options",
    "Supervisor",
    "alive",
    "cgroup_members",
    "command_line",
    "descendants",
    "exited",
    "kill_cgroup",
    "main",
    "own_cgroup_dir",
    "parse",
    "proc_stat",
    "remove_cgroup",
]

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
KILL_ROUNDS_S = 3.0
"""How long SIGKILL is repeated (for processes forked meanwhile) before survivors are reported."""
MAIN_FIRST_REST_S = 1.0
"""With ``--main-first``: the grace of what is left once the command has ended."""
REPORT_EVERY_S = 1.0
ENDING_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGUSR1)


# -- the supervisor ---------------------------------------------------------------------------


class Supervisor:
    """The running supervisor: its command, where it tracks it, and how it ends it."""

    def __init__(self, options: Options) -> None:
        self.grace_s = options.grace
        self.main_first = options.main_first
        self.report = options.report
        self.status_fd = options.status_fd
        self.group = None if options.no_cgroup else make_cgroup()
        self.main: int | None = None
        self.main_code: int | None = None
        self.relay: StdoutRelay | None = StdoutRelay() if options.json_stdout else None
        self._reported: list[int] | None = None

    def tracked(self) -> list[int]:
        """Every live process we answer for: our descendants, and our cgroup's members."""
        members = cgroup_members(self.group) if self.group is not None else []
        if not self.reap(block=False) and not members:
            return []  # a subreaper without children has no descendants: no /proc walk
        found = set(descendants(os.getpid()))
        found.update(members)
        found.discard(os.getpid())
        return sorted(pid for pid in found if alive(pid))

    def start(self, command: list[str]) -> None:
        """Fork and exec the command (in our cgroup, with default signal handling)."""
        try:
            pid = os.fork()
        except OSError as exc:
            sys.stderr.write(f"cannot start {command[0]}: {exc.strerror or exc}\n")
            raise SystemExit(127) from None
        if pid == 0:
            for signum in ENDING_SIGNALS:
                signal.signal(signum, signal.SIG_DFL)
            if self.group is not None:
                # Join before exec, so nothing the command starts is ever outside it. A
                # failure leaves the command tracked through /proc alone.
                with contextlib.suppress(OSError):
                    write_text(os.path.join(self.group, "cgroup.procs"), "0")
            if self.status_fd is not None:
                os.close(self.status_fd)
            if self.relay is not None:
                os.dup2(self.relay.write_end, 1)
            try:
                os.execvp(command[0], command)
            except OSError as exc:
                sys.stderr.write(f"cannot run {command[0]}: {exc.strerror or exc}\n")
                os._exit(127)
        self.main = pid
        if self.relay is not None:
            self.relay.start()

    def reap(self, block: bool) -> bool:
        """Collect exited children (the command, and orphans re-parented to us); False once
        we have no children left."""
        while True:
            try:
                pid, status = os.waitpid(-1, 0 if block else os.WNOHANG)
            except ChildProcessError:
                return False
            except InterruptedError:
                continue
            if pid == 0:
                return True
            if pid == self.main:
                self.main_code = os.waitstatus_to_exitcode(status)
                self._say(f"exit {self.main_code}\n")
            if block:
                return True

    def _say(self, line: str) -> None:
        if self.status_fd is None:
            return
        with contextlib.suppress(OSError):
            os.write(self.status_fd, line.encode())
            os.close(self.status_fd)
        self.status_fd = None

    def end_all(self) -> list[int]:
        """End every tracked process: SIGTERM, the grace, then SIGKILL until none is left.
        Returns the survivors (normally none)."""
        for signum in ENDING_SIGNALS:
            signal.signal(signum, signal.SIG_IGN)
        targets = self.tracked()
        if self.report is not None:
            signal.setitimer(signal.ITIMER_REAL, 0)
            self.write_report(targets)
        signalled: set[int] = set()
        grace = self.grace_s
        if self.main_first and self.main is not None and self.main_code is None:
            signal_quietly(self.main, signal.SIGTERM)
            deadline, pause = time.monotonic() + grace, _backoff()
            while self.main_code is None and time.monotonic() < deadline:
                time.sleep(next(pause))
                self.reap(block=False)
            signalled.add(self.main)
            targets = self.tracked()
            grace = MAIN_FIRST_REST_S
        deadline, pause = time.monotonic() + grace, _backoff()
        while targets and time.monotonic() < deadline:
            for pid in targets:
                if pid not in signalled:  # once each: a second TERM may cut a clean exit short
                    signal_quietly(pid, signal.SIGTERM)
                    signalled.add(pid)
            time.sleep(next(pause))
            targets = self.tracked()
        deadline, pause = time.monotonic() + KILL_ROUNDS_S, _backoff()
        while targets and time.monotonic() < deadline:
            if self.group is not None:
                kill_cgroup(self.group)
            for pid in targets:
                signal_quietly(pid, signal.SIGKILL)
            time.sleep(next(pause))
            targets = self.tracked()
        if self.group is not None and not targets:
            remove_cgroup(self.group)
        if self.report is not None:
            if targets:
                self.write_report(targets)
            else:
                with contextlib.suppress(OSError):
                    os.unlink(self.report)
        return targets

    def collect_main(self, wait_s: float = 1.0) -> None:
        """Reap the command if that is still to do, so its code is reported before we exit.

        A kill round can find nothing alive while the command is a zombie not yet reaped: it
        died between the round's ``waitpid`` and its look at ``/proc``, which leaves zombies
        out."""
        deadline, pause = time.monotonic() + wait_s, _backoff()
        while self.main is not None and self.main_code is None and time.monotonic() < deadline:
            if not self.reap(block=False):
                return
            time.sleep(next(pause))

    def write_report(self, pids: list[int]) -> None:
        """Record who we are and the processes we answer for (when they changed)."""
        if self.report is None or pids == self._reported:
            return
        self._reported = pids
        me = proc_stat(os.getpid())
        entries = []
        for pid in pids:
            stat = proc_stat(pid)
            if stat is not None:
                entries.append({"pid": pid, "started": stat[2], "command": command_line(pid)})
        record = {
            "supervisor": {"pid": os.getpid(), "started": me[2] if me else 0},
            "cgroup": self.group,
            "processes": entries,
        }
        import json  # only supervisors that keep a record pay for it

        partial = self.report + ".part"
        with contextlib.suppress(OSError):
            write_text(partial, json.dumps(record))
            os.replace(partial, self.report)

    def finish(self, code: int) -> None:
        """End what is left and exit."""
        survivors = self.end_all()
        self.collect_main()
        if self.relay is not None:
            self.relay.join(1.0)
        os._exit(code if not survivors else (code or 1))


def _backoff() -> Iterator[float]:
    """Pauses between looks at what is left: most processes end within a millisecond of
    their signal, a few take their time."""
    delay = 0.0005
    while True:
        yield delay
        delay = min(delay * 2, 0.02)


def _exit_status(code: int | None) -> int:
    if code is None:
        return 1
    return code if code >= 0 else 128 - code


def _detach_stdio() -> None:
    """Drop our copies of the pipes, so only the command's side keeps them open."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)


class Options:
    """The command line (parsed by hand, in a plain class: argparse or dataclasses alone
    would double the start-up time)."""

    def __init__(self) -> None:
        self.parent = 0
        self.grace = 1.0
        self.linger = False
        self.main_first = False
        self.status_fd: int | None = None
        self.report: str | None = None
        self.no_cgroup = False
        self.json_stdout = False
        self.kill_on_parent_death = False
        self.command: list[str] = []


USAGE = (
    "usage: supervisor.py --parent PID [--grace S] [--linger] [--main-first] [--status-fd N] "
    "[--report PATH] [--no-cgroup] [--json-stdout] [--kill-on-parent-death] "
    "-- COMMAND [ARGS...]\n"
)


def parse(argv: list[str]) -> Options:
    """``argv`` as :class:`Options`; exits 2 with the usage on anything else."""
    options = Options()
    flags = {
        "--linger": "linger",
        "--main-first": "main_first",
        "--no-cgroup": "no_cgroup",
        "--json-stdout": "json_stdout",
        "--kill-on-parent-death": "kill_on_parent_death",
    }
    values = {"--parent": int, "--grace": float, "--status-fd": int, "--report": str}
    rest = list(argv)
    try:
        while rest and rest[0] != "--":
            arg = rest.pop(0)
            if arg in flags:
                setattr(options, flags[arg], True)
            elif arg in values:
                setattr(options, arg[2:].replace("-", "_"), values[arg](rest.pop(0)))
            else:
                raise ValueError(arg)
        options.command = rest[1:]
    except (IndexError, ValueError):
        options.command = []
    if not options.command or not options.parent:
        sys.stderr.write(USAGE)
        raise SystemExit(2)
    return options


def main(argv: list[str]) -> None:
    """Arm the death signal, start the command, and end what it leaves when it is time."""
    options = parse(argv)
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGUSR1, 0, 0, 0)
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    if os.getppid() != options.parent:
        raise SystemExit(0)  # the pod died before the death signal was armed
    # Until the handlers are in place, a signal ends us by default: nothing is started yet.
    supervisor = Supervisor(options)

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        if signum == signal.SIGUSR1 and options.kill_on_parent_death:
            supervisor.grace_s, supervisor.main_first = 0.0, False
        supervisor.finish(128 + signum)

    for signum in ENDING_SIGNALS:
        signal.signal(signum, on_signal)
    supervisor.start(options.command)
    _detach_stdio()
    if supervisor.report is not None:
        # Refreshed from a timer: the waits below block, and a signal handler runs in them.
        signal.signal(signal.SIGALRM, lambda *_: supervisor.write_report(supervisor.tracked()))
        signal.setitimer(signal.ITIMER_REAL, 0.05, REPORT_EVERY_S)
    while supervisor.main_code is None:
        supervisor.reap(block=True)
    if not options.linger:
        supervisor.finish(_exit_status(supervisor.main_code))
    # Background jobs run on until the last exits (they are our children by then), or a
    # signal ends them.
    while supervisor.reap(block=True) or supervisor.tracked():
        if supervisor.group is not None and not descendants(os.getpid()):
            time.sleep(0.1)  # in our cgroup but not (yet) our child: look again shortly
    supervisor.finish(_exit_status(supervisor.main_code))


if __name__ == "__main__":
    main(sys.argv[1:])
