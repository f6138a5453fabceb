"""The host's pods and memory over time, sampled while the HTTP server runs.

Every :attr:`~orchestrator.core.memory_series.MemorySeries.interval_s` seconds one sample of
the host's listing (how many pods are loaded, how many are not, the process's RSS) goes into
the context's :class:`MemorySeries` (``ctx.memory``), which the memory chart draws. Sampling
starts with the app's routes (built in the server's loop), or else with the first page asked
for, and ends with the app (:func:`stop_sampling`, from ``aclose_app``); a listing that fails
skips one sample, never the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import weakref

from orchestrator.core.charts import MemorySample
from orchestrator.core.memory_series import MemorySeries
from orchestrator.serving.http.context import HttpContext

__all__ = ["is_sampling", "sample_once", "series_of", "stop_sampling"]

log = logging.getLogger(__name__)

_tasks: weakref.WeakKeyDictionary[HttpContext, asyncio.Task[None]] = weakref.WeakKeyDictionary()
_stopped: weakref.WeakSet[HttpContext] = weakref.WeakSet()
"""Contexts whose server stopped: a late request does not start sampling again."""


async def sample_once(ctx: HttpContext) -> MemorySample:
    """The host now: its pods loaded and not, and its memory (None for one pod's server)."""
    rows = await ctx.pods()
    host = await ctx.host_stats()
    loaded = sum(1 for row in rows if row.loaded)
    return MemorySample(
        at=time.time(),
        loaded=loaded,
        unloaded=len(rows) - loaded,
        rss_bytes=host.rss_bytes if host is not None else None,
    )


async def _sample_forever(ctx: HttpContext, series: MemorySeries) -> None:
    while True:
        try:
            series.add(await sample_once(ctx))
        except Exception:  # a listing that fails costs one sample, not the chart
            log.debug("memory sample failed", exc_info=True)
        await asyncio.sleep(series.interval_s)


def series_of(ctx: HttpContext) -> MemorySeries:
    """The context's series, made on first use, and its sampling started if it is not."""
    if not isinstance(ctx.memory, MemorySeries):
        ctx.memory = MemorySeries()
    series: MemorySeries = ctx.memory
    task = _tasks.get(ctx)
    if (task is None or task.done()) and ctx not in _stopped:
        with contextlib.suppress(RuntimeError):  # no running loop yet: the first page starts it
            _tasks[ctx] = asyncio.get_running_loop().create_task(_sample_forever(ctx, series))
    return series


def is_sampling(ctx: HttpContext) -> bool:
    """Whether the context's host is being sampled now."""
    task = _tasks.get(ctx)
    return task is not None and not task.done()


async def stop_sampling(ctx: HttpContext) -> None:
    """End the context's sampling (the server stops); the series stays as it was."""
    _stopped.add(ctx)
    task = _tasks.pop(ctx, None)
    if task is not None:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
