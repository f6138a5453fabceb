"""What the kernel says about processes, and how to end them: ``/proc`` and cgroup v2.

Used by the supervisor (:mod:`.supervisor`, which imports this module by its path, so it
must stay standard library only) and by the pod (:mod:`.leftovers`, the session lock, the
server and the fleet read ``/proc`` through it).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time

__all__ = [
    "CGROUP_PREFIX",
    "alive",
    "cgroup_members",
    "command_line",
    "descendants",
    "exited",
    "kill_cgroup",
    "make_cgroup",
    "own_cgroup_dir",
    "proc_stat",
    "read_text",
    "remove_cgroup",
    "signal_quietly",
    "write_text",
]

CGROUP_PREFIX = "pod-procs."
"""Cgroups the supervisors create, named ``pod-procs.<supervisor pid>.<its start time>``."""


# -- reading /proc ----------------------------------------------------------------------------


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


def command_line(pid: int) -> str:
    """A process's command line, shortened, for reports."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as file:
            raw = file.read()
    except OSError:
        return ""
    return raw.replace(b"\0", b" ").decode(errors="replace").strip()[:200]


def signal_quietly(pid: int, signum: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signum)


# -- cgroup v2 --------------------------------------------------------------------------------


def read_text(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as file:
        return file.read()


def write_text(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as file:
        file.write(text)


def own_cgroup_dir() -> str | None:
    """This process's cgroup v2 directory, or None where there is no v2 hierarchy."""
    try:
        lines = read_text("/proc/self/cgroup").splitlines()
        mounts = read_text("/proc/self/mountinfo").splitlines()
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
        return [int(pid) for pid in read_text(os.path.join(group, "cgroup.procs")).split()]
    except (OSError, ValueError):
        return []


def kill_cgroup(group: str) -> None:
    """SIGKILL every process in a cgroup at once (``cgroup.kill``), or one by one before 5.14."""
    try:
        write_text(os.path.join(group, "cgroup.kill"), "1")
    except OSError:
        for pid in cgroup_members(group):
            signal_quietly(pid, signal.SIGKILL)


def make_cgroup() -> str | None:
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
