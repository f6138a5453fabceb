"""How much memory the host holds, an estimate of each loaded pod's part of it, and giving
back what unloaded pods held (:func:`release_unloaded`).

Pods of one process share one heap, so no exact per-pod figure exists. The estimate: what the
host grew by since it started (its RSS above the baseline it measured before loading any pod)
split across the loaded pods in proportion to their session files' sizes, each counted at
least :data:`POD_FLOOR_BYTES`. A loaded history is most of what a pod holds, and its file's
size follows it; the floor stands for the controller, tools and buffers every pod has.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import gc
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

POD_FLOOR_BYTES = 256 * 1024
"""What every loaded pod counts as at least: about what a pod with a short history holds
(0.26-0.42 MiB measured when the host was designed, issue #25)."""


@dataclass(frozen=True)
class ProcessMemory:
    """One reading of this process's memory."""

    rss_bytes: int
    """Resident memory: every page of the process in RAM, shared ones included."""
    pss_bytes: int | None
    """Proportional set size: shared pages divided among the processes sharing them (None
    where the kernel does not tell, as without ``/proc/self/smaps_rollup``)."""


def process_memory() -> ProcessMemory | None:
    """This process's memory now; None where ``/proc`` does not tell (not Linux)."""
    try:
        text = Path("/proc/self/smaps_rollup").read_text()
    except OSError:
        return _from_statm()
    fields: dict[str, int] = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if len(parts) == 2 and parts[1] == "kB" and parts[0].isdigit():
            fields[key] = int(parts[0]) * 1024
    if "Rss" not in fields:
        return _from_statm()
    return ProcessMemory(rss_bytes=fields["Rss"], pss_bytes=fields.get("Pss"))


def _from_statm() -> ProcessMemory | None:
    """RSS from ``/proc/self/statm`` (older kernels have no ``smaps_rollup``)."""
    try:
        resident = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return ProcessMemory(rss_bytes=resident * os.sysconf("SC_PAGE_SIZE"), pss_bytes=None)


def split_shares(total_bytes: int, weights: dict[str, int]) -> dict[str, int]:
    """``total_bytes`` split across ``weights``' keys in proportion to their weights (each
    at least :data:`POD_FLOOR_BYTES`); the parts add up to the total exactly."""
    if not weights:
        return {}
    counted = {name: max(weight, POD_FLOOR_BYTES) for name, weight in weights.items()}
    whole = sum(counted.values())
    total = max(0, total_bytes)
    shares = {name: total * weight // whole for name, weight in counted.items()}
    # What integer division left over goes to the heaviest pod, so the column adds up.
    heaviest = max(counted, key=lambda name: counted[name])
    shares[heaviest] += total - sum(shares.values())
    return shares


def release_unloaded() -> None:
    """Free what unloaded pods held. A loaded pod's objects are frozen out of the collector
    (``open_pod``: walking millions of history objects stalls every pod of the process), so
    their cycles are only ever freed here: unfreeze, collect, freeze what is still alive."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()
    _trim_heap()


def _trim_heap() -> None:
    """Give the C heap's free pages back to the system (glibc's ``malloc_trim``).

    An unloaded pod's memory returns to the allocator, not to the system: its arenas keep the
    freed pages, so a host that loaded a thousand sessions once stays that big. Trimming after
    a burst of evictions returns them; elsewhere (musl, macOS) it is skipped.
    """
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim() -> Any:
    """libc's ``malloc_trim``, looked up once (``find_library`` runs a program), or None."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    return trim
