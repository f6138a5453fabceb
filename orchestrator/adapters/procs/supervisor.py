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

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
CGROUP_PREFIX = "pod-procs."
"""Cgroups the supervisors create, named ``pod-procs.<supervisor pid>.<its start time>``."""
KILL_ROUNDS_S = 3.0
"""How long SIGKILL is repeated (for processes forked meanwhile) before survivors are reported."""
MAIN_FIRST_REST_S = 1.0
"""With ``--main-first``: the grace of what is left once the command has ended."""
REPORT_EVERY_S = 1.0
ENDING_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGUSR1)
NOISE_PASSED = 5
"""With ``--json-stdout``: stray stdout lines passed on before the rest are only counted."""
NOISE_SAID_EVERY = 100_000
"""With ``--json-stdout``: a count of dropped lines goes to stderr this often, and at the end."""


# -- reading /proc (also used by the pod: orchestrator.adapters.procs) -------------------------------


def proc_stat(pid: int) -> tuple[str, int, int] | None:
    """A process's state letter, parent pid and start time (clock ticks since boot)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    # Fields after the command: state, ppid, pgrp, session, ... starttime is the 20th.
    return fields[0].decode(), int(fields[1]), int(fields[19])


def alive(pid: int, started: int | None = None) -> bool:
    """Whether ``pid`` runs (a zombie does not), and is the process that started at ``started``."""
    stat = proc_stat(pid)
    if stat is None or stat[0] in ("Z", "X"):
        return False
    return started is None or stat[2] == started


def exited(pid: int) -> bool:
    """Whether process ``pid`` has exited (a zombie has); False when that cannot be told (a
    pid of another PID namespace reads as 0)."""
    if pid <= 0:
        return False
    stat = proc_stat(pid)
    if stat is not None:
        return stat[0] in ("Z", "X")
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def descendants(root: int) -> list[int]:
    """The live descendants of ``root``, read from /proc (zombies left out)."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        stat = proc_stat(int(entry))
        if stat is not None and stat[0] not in ("Z", "X"):
            children.setdefault(stat[1], []).append(int(entry))
    found: list[int] = []
    todo = list(children.get(root, []))
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


# -- cgroup v2 --------------------------------------------------------------------------------


def _read(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as file:
        return file.read()


def _write(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as file:
        file.write(text)


def own_cgroup_dir() -> str | None:
    """This process's cgroup v2 directory, or None where there is no v2 hierarchy."""
    try:
        lines = _read("/proc/self/cgroup").splitlines()
        mounts = _read("/proc/self/mountinfo").splitlines()
    except OSError:
        return None
    relative = next((line[3:] for line in lines if line.startswith("0::")), None)
    if relative is None:
        return None
    for mount in mounts:
        left, _, right = mount.partition(" - ")
        if right.split(" ", 1)[0] != "cgroup2":
            continue
        fields = left.split()
        root, point = fields[3], fields[4]
        # The path in /proc/self/cgroup is relative to the hierarchy's root; the mount may
        # show only a subtree of it (a container).
        inner = os.path.relpath(relative, root) if relative.startswith(root) else None
        if inner is None or inner.startswith(".."):
            continue
        return os.path.join(point, inner) if inner != "." else point
    return None


def cgroup_members(group: str) -> list[int]:
    """The processes in a cgroup (empty when it is gone)."""
    try:
        return [int(pid) for pid in _read(os.path.join(group, "cgroup.procs")).split()]
    except (OSError, ValueError):
        return []


def kill_cgroup(group: str) -> None:
    """SIGKILL every process in a cgroup at once (``cgroup.kill``), or one by one before 5.14."""
    try:
        _write(os.path.join(group, "cgroup.kill"), "1")
    except OSError:
        for pid in cgroup_members(group):
            _signal(pid, signal.SIGKILL)


def _make_cgroup() -> str | None:
    """A cgroup for the command next to our own, or None where we may not make one."""
    base = own_cgroup_dir()
    started = proc_stat(os.getpid())
    if base is None or started is None:
        return None
    group = os.path.join(base, f"{CGROUP_PREFIX}{os.getpid()}.{started[2]}")
    try:
        os.mkdir(group)
    except OSError:
        return None
    if not os.access(os.path.join(group, "cgroup.procs"), os.W_OK):
        remove_cgroup(group)
        return None
    return group


def remove_cgroup(group: str) -> None:
    """Remove an emptied cgroup, and the cgroups nested in it first.

    A supervised pod (a child pod, a pod ``pod acp`` started) runs its own supervisors, whose
    cgroups are made inside the one it runs in: a cgroup with a child cannot be removed, and
    one left behind cost every later pod start a retry here."""
    try:
        nested = [entry.path for entry in os.scandir(group) if entry.is_dir(follow_symlinks=False)]
    except OSError:
        nested = []
    for inner in nested:
        kill_cgroup(inner)
        remove_cgroup(inner)
    # rmdir fails while exiting members are still being torn down: try for a moment.
    for _ in range(50):
        try:
            os.rmdir(group)
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.01)


# -- the supervisor ---------------------------------------------------------------------------


class Supervisor:
    """The running supervisor: its command, where it tracks it, and how it ends it."""

    def __init__(self, options: Options) -> None:
        self.grace_s = options.grace
        self.main_first = options.main_first
        self.report = options.report
        self.status_fd = options.status_fd
        self.group = None if options.no_cgroup else _make_cgroup()
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
                    _write(os.path.join(self.group, "cgroup.procs"), "0")
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
            _signal(self.main, signal.SIGTERM)
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
                    _signal(pid, signal.SIGTERM)
                    signalled.add(pid)
            time.sleep(next(pause))
            targets = self.tracked()
        deadline, pause = time.monotonic() + KILL_ROUNDS_S, _backoff()
        while targets and time.monotonic() < deadline:
            if self.group is not None:
                kill_cgroup(self.group)
            for pid in targets:
                _signal(pid, signal.SIGKILL)
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
            _write(partial, json.dumps(record))
            os.replace(partial, self.report)

    def finish(self, code: int) -> None:
        """End what is left and exit."""
        survivors = self.end_all()
        self.collect_main()
        if self.relay is not None:
            self.relay.join(1.0)
        os._exit(code if not survivors else (code or 1))


# -- stdout filtering (--json-stdout) ------------------------------------------------------


class LineFilter:
    """Passes on the lines that may be JSON-RPC, streaming (a message of megabytes is never
    held whole), and counts the others; the first ``passed_noise`` of those pass too."""

    def __init__(self, passed_noise: int = NOISE_PASSED) -> None:
        self.passed_noise = passed_noise
        self.noise = 0
        """Non-JSON lines seen (passed on or dropped)."""
        self._state = "start"  # "start" (leading blanks so far), "pass" or "drop"
        self._lead = b""

    def feed(self, chunk: bytes) -> bytes:
        """What of ``chunk`` goes on."""
        out: list[bytes] = []
        at = 0
        while at < len(chunk):
            end = chunk.find(b"\n", at)
            stop = len(chunk) if end < 0 else end + 1
            if self._state == "start":
                part = chunk[at:stop]
                body = part.lstrip(b" \t\r")
                if not body or body == b"\n":
                    # Blank so far: a line of blanks is dropped uncounted, else wait.
                    self._lead = b"" if end >= 0 else self._lead + part[:4096]
                    at = stop
                    continue
                if body[:1] in (b"{", b"["):
                    self._state = "pass"
                else:
                    self.noise += 1
                    self._state = "pass" if self.noise <= self.passed_noise else "drop"
                if self._state == "pass":
                    out.append(self._lead)
                self._lead = b""
            if self._state == "pass":
                out.append(chunk[at:stop])
            if end >= 0:
                self._state = "start"
            at = stop
        return b"".join(out)


class StdoutRelay:
    """The command's stdout through a :class:`LineFilter` to ours, in a thread."""

    def __init__(self) -> None:
        self.read_end, self.write_end = os.pipe()
        # Our copies of where the lines and the counts go; _detach_stdio drops fds 1 and 2.
        self.out = os.dup(1)
        self.err = os.dup(2)
        self.filter = LineFilter()
        self._said = 0
        import threading  # only supervisors that filter pay for it

        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        """Begin relaying (after the command was forked with ``write_end`` as its stdout)."""
        os.close(self.write_end)
        self._thread.start()

    def _run(self) -> None:
        try:
            while chunk := os.read(self.read_end, 1 << 16):
                passed = self.filter.feed(chunk)
                view = memoryview(passed)
                while view:
                    view = view[os.write(self.out, view) :]
                if self.filter.noise - self._said >= NOISE_SAID_EVERY:
                    self._say_noise()
        except OSError:
            pass  # the pod closed its end: nobody is reading any more
        finally:
            self._say_noise()
            with contextlib.suppress(OSError):
                os.close(self.out)

    def _say_noise(self) -> None:
        dropped = self.filter.noise - min(self.filter.noise, self.filter.passed_noise)
        if self.filter.noise == self._said or not dropped:
            return
        self._said = self.filter.noise
        with contextlib.suppress(OSError):
            os.write(
                self.err,
                f"supervisor: {self.filter.noise} lines on stdout were not JSON-RPC; "
                f"{dropped} dropped\n".encode(),
            )

    def join(self, timeout_s: float) -> None:
        """Let the last lines through before we exit."""
        self._thread.join(timeout_s)


def command_line(pid: int) -> str:
    """A process's command line, shortened, for reports."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as file:
            raw = file.read()
    except OSError:
        return ""
    return raw.replace(b"\0", b" ").decode(errors="replace").strip()[:200]


def _backoff() -> Iterator[float]:
    """Pauses between looks at what is left: most processes end within a millisecond of
    their signal, a few take their time."""
    delay = 0.0005
    while True:
        yield delay
        delay = min(delay * 2, 0.02)


def _signal(pid: int, signum: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signum)


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
