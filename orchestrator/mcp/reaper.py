"""Run an MCP server so that it and everything it starts die with the pod:
``python …/reaper.py PPID COMMAND ARGS…``.

Closing a stdio server's stdin ends a well-behaved server, and the SDK kills the process
group of one that lingers when the pod closes it. Neither covers two cases: a ``kill -9`` of
the pod (no chance to close anything), and processes the server started itself (``npx``
runs node, a server runs helpers) that outlive a server which exits cleanly. So the server
runs under this small supervisor, which leads the process group the SDK creates:

- the kernel sends it SIGUSR1 when the pod dies (``PR_SET_PDEATHSIG``); it then ends the
  whole group: SIGTERM, a short grace, SIGKILL;
- when the server exits, whatever it left behind in the group is killed, and the supervisor
  exits with the server's status, so the pod sees the server's end as the end of the pipe;
- a SIGTERM from the SDK's own shutdown reaches every member of the group; the supervisor
  waits for the server for the same grace before it kills the rest.

The server inherits stdin, stdout and stderr; the supervisor lets go of its own copies so
the pipe closes when the server's side of it does. It imports only the standard library and
runs by its path (about 20 ms and 9 MB per server).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time
from types import FrameType

PR_SET_PDEATHSIG = 1
GRACE_S = 2.0
"""How long the group has between SIGTERM and SIGKILL."""


def _kill_group(first: signal.Signals | None) -> None:
    """Signal the whole group (``first``, unless it was sent already), then SIGKILL what is
    left after the grace."""
    group = os.getpgrp()
    with _ignoring(signal.SIGTERM):
        if first is not None:
            _signal_group(group, first)
        deadline = time.monotonic() + GRACE_S
        while time.monotonic() < deadline and _others_alive(group):
            time.sleep(0.05)
        _signal_group(group, signal.SIGKILL)


class _ignoring:
    """Ignore a signal sent to our own group while we send it."""

    def __init__(self, signum: signal.Signals) -> None:
        self.signum = signum

    def __enter__(self) -> None:
        self.previous = signal.signal(self.signum, signal.SIG_IGN)

    def __exit__(self, *_: object) -> None:
        signal.signal(self.signum, self.previous)


def _signal_group(group: int, signum: signal.Signals) -> None:
    if signum == signal.SIGKILL:
        # SIGKILL cannot be ignored: signal every other member by pid.
        for pid in _members(group):
            _kill(pid, signum)
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signum)


def _kill(pid: int, signum: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signum)


def _members(group: int) -> list[int]:
    """The other live processes of the group, read from /proc."""
    me = os.getpid()
    found: list[int] = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for entry in entries:
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        # Fields after the command: state, ppid, pgrp, ...
        if int(fields[2]) == group and fields[0] != b"Z":
            found.append(int(entry))
    return found


def _others_alive(group: int) -> bool:
    _reap()
    return bool(_members(group))


def _reap() -> None:
    """Collect exited children (the server and anything re-parented to us)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _on_parent_death(_signum: int, _frame: FrameType | None) -> None:
    _kill_group(signal.SIGTERM)
    os._exit(137)


def _on_term(_signum: int, _frame: FrameType | None) -> None:
    # The SDK's shutdown signalled the group: the server got the SIGTERM too.
    _kill_group(None)
    os._exit(143)


def _detach_stdio() -> None:
    """Drop our copies of the pipes, so only the server's side keeps them open."""
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)


def main(argv: list[str]) -> None:
    """Arm the death signal, start the server, and clean its group up when it ends."""
    if len(argv) < 2:
        sys.stderr.write("usage: python reaper.py PPID COMMAND [ARGS...]\n")
        raise SystemExit(2)
    parent, command = int(argv[0]), argv[1:]
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGUSR1, 0, 0, 0)
    signal.signal(signal.SIGUSR1, _on_parent_death)
    signal.signal(signal.SIGTERM, _on_term)
    if os.getppid() != parent:
        raise SystemExit(0)  # the pod died before the signal was armed
    try:
        server = os.fork()
    except OSError as exc:
        sys.stderr.write(f"cannot start {command[0]}: {exc.strerror or exc}\n")
        raise SystemExit(127) from None
    if server == 0:
        signal.signal(signal.SIGUSR1, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        try:
            os.execvp(command[0], command)
        except OSError as exc:
            sys.stderr.write(f"cannot run {command[0]}: {exc.strerror or exc}\n")
            os._exit(127)
    _detach_stdio()
    while True:
        try:
            _, status = os.waitpid(server, 0)
            break
        except InterruptedError:
            continue
    code = os.waitstatus_to_exitcode(status)
    _kill_group(signal.SIGTERM)
    os._exit(code if code >= 0 else 128 - code)


if __name__ == "__main__":
    main(sys.argv[1:])
