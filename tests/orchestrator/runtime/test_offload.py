"""Off-loop work: runs in a thread with the cyclic collector paused, and restores it."""

from __future__ import annotations

import asyncio
import gc
import threading

import pytest

from orchestrator.runtime.offload import off_loop


async def test_work_runs_in_a_thread_with_the_collector_paused() -> None:
    seen: list[tuple[bool, bool]] = []

    def work() -> int:
        seen.append((threading.current_thread() is threading.main_thread(), gc.isenabled()))
        return 7

    assert gc.isenabled()
    assert await off_loop(work) == 7
    assert seen == [(False, False)]
    assert gc.isenabled()


async def test_overlapping_work_keeps_the_collector_paused_until_the_last_ends() -> None:
    first_inside, release = threading.Event(), threading.Event()

    def slow() -> None:
        first_inside.set()
        release.wait(5)

    slow_task = asyncio.ensure_future(off_loop(slow))
    await asyncio.to_thread(first_inside.wait, 5)
    await off_loop(lambda: None)  # a second piece of work ends first
    assert not gc.isenabled()
    release.set()
    await slow_task
    assert gc.isenabled()


async def test_a_failing_piece_of_work_still_restores_the_collector() -> None:
    def boom() -> None:
        raise ValueError("no")

    with pytest.raises(ValueError):
        await off_loop(boom)
    assert gc.isenabled()


async def test_kept_results_are_frozen_out_of_full_collections() -> None:
    before = gc.get_freeze_count()
    kept = await off_loop(lambda: [{"a": [1]} for _ in range(100)], keep=True)
    assert gc.get_freeze_count() >= before + len(kept)
    gc.unfreeze()
