"""The processes of a pod's tree, read from ``/proc``: what the kit must see gone at the end.

A pod that delegates to child pods starts processes of its own (a child ``pod serve``, its
supervisor, whatever their tools run). The kit does not trust the pod to say which: it walks
``/proc`` for every descendant of the pod's process (parent links), and adds the pids a pod
publishes in its info files (``orchestrator.config.paths.pod_info_path`` of each child's socket).
A process is named by its pid *and* its start time, so a pid the kernel reuses later is never
mistaken for a survivor.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Proc", "alive", "descendants", "info_file_proc", "proc_of"]


@dataclass(frozen=True, slots=True)
class Proc:
    """One process: its pid, its start time (clock ticks since boot) and its command line."""

    pid: int
    start: int
    cmdline: str

    def describe(self) -> str:
        """``pid 123 (python -m cli serve …)`` for reports."""
        return f"pid {self.pid} ({self.cmdline[:100]})"


def _stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, start time) of ``pid``, or None when it is gone (or a zombie)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after its last ')'.
    fields = text[text.rindex(")") + 2 :].split()
    if fields[0] == "Z":  # a zombie has exited; only its parent's wait is missing
        return None
    return int(fields[1]), int(fields[19])


def _cmdline(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    return raw.replace(b"\0", b" ").decode(errors="replace").strip()


def proc_of(pid: int) -> Proc | None:
    """The running process ``pid``, or None."""
    stat = _stat(pid)
    if stat is None:
        return None
    return Proc(pid=pid, start=stat[1], cmdline=_cmdline(pid))


def descendants(root: int) -> list[Proc]:
    """Every running descendant of ``root`` (children, grandchildren, …), not ``root``."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        stat = _stat(int(entry))
        if stat is not None:
            parents[int(entry)] = stat[0]
    found: list[int] = []
    frontier = {root}
    while frontier:
        children = [pid for pid, ppid in parents.items() if ppid in frontier]
        found += children
        frontier = set(children)
    return [proc for pid in found if (proc := proc_of(pid)) is not None]


def alive(proc: Proc) -> bool:
    """Whether that very process (same pid, same start time) still runs."""
    stat = _stat(proc.pid)
    return stat is not None and stat[1] == proc.start


def info_file_proc(socket: str) -> Proc | None:
    """The process a pod's info file names for ``socket`` (our runtime's ``pod ls`` files),
    if there is such a file and that process runs."""
    from orchestrator.config.paths import UnsafePathError, pod_info_path

    try:
        data = json.loads(pod_info_path(Path(socket)).read_text())
    except (OSError, ValueError, UnsafePathError):
        return None
    pid = data.get("pid") if isinstance(data, dict) else None
    return proc_of(pid) if isinstance(pid, int) else None
