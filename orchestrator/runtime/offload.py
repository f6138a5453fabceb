"""Work too long for the event loop (wiring a long loaded history, shrinking a summary request),
run in a thread so that clients are still answered meanwhile.

A thread alone is not enough in CPython: the loop waits for the GIL at every syscall while the
worker runs, and a full pass of the cyclic garbage collector, triggered by the worker's
allocations, holds the GIL for as long as it takes to walk every object. So the collector is
paused while such work runs (the data it builds has no cycles; reference counting frees it),
and what the work builds to keep can be left out of later full passes (``keep``).
"""

from __future__ import annotations

import asyncio
import gc
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

_lock = threading.Lock()
_running = 0
_gc_was_enabled = False


async def off_loop(work: Callable[[], T], *, keep: bool = False) -> T:
    """``work()`` in a thread with the cyclic collector paused; ``keep``: its result lives long,
    so freeze it (and everything else alive) out of future full collections."""
    return await asyncio.to_thread(_run, work, keep)


def _run(work: Callable[[], T], keep: bool) -> T:
    global _running, _gc_was_enabled
    with _lock:
        if _running == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _running += 1
    try:
        result = work()
        if keep:
            gc.freeze()
        return result
    finally:
        with _lock:
            _running -= 1
            if _running == 0 and _gc_was_enabled:
                gc.enable()
