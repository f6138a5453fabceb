"""Reloading a pod from its session file: what a pod host pays to bring an unloaded pod back.

For sessions of 1,000 and 10,000 items (``history_items``: user / assistant + tool_use /
tool_result turns, each closed by a ``turn_end``), each sample times:

* ``load``: reading and parsing the session file (``open_session``);
* ``reload``: ``open_session`` + ``build_pod(continue_=True)`` (the pod ready to serve), then
  the ``history`` reply an attaching client asks for first; the session writer is closed
  afterwards without a ``shutdown``, as a host's eviction does. ``reload_cpu`` is the CPU
  time of the same: on a busy machine, the wall time is that plus waiting for a CPU.

The target (issue 25) is the reload p95 ≤ 200 ms at both sizes. ``loop_stall_ms`` is the
longest the event loop went without running while one reload ran, loading off the loop
(``open_session_async``): what the other pods of a host feel.

    python -m bench.reload [--quick]
"""

from __future__ import annotations

import asyncio
import gc
import sys
import time
from pathlib import Path
from typing import Any

from bench._common import (
    Result,
    bench_config,
    history_items,
    latency_stats,
    main_for,
    row,
    scratch_workspace,
    write_session,
)

NAME = "reload"
SIZES = (1_000, 10_000)
QUICK_SIZES = (200,)
SAMPLES = 20
QUICK_SAMPLES = 3
TARGET_P95_MS = 200.0
TICK_S = 0.001


def _reload(config: Any) -> tuple[float, float, float, int]:
    """One reload on the calling thread: (load s, reload s, reload CPU s, history reply
    bytes). The CPU time is this thread's: what the reload costs, whatever else the machine
    runs meanwhile."""
    from orchestrator.adapters.providers.scripted import ScriptedProvider
    from orchestrator.serving.pod import build_pod, open_session

    cpu = time.thread_time()
    start = time.perf_counter()
    opened = open_session(config, continue_=True)
    loaded = time.perf_counter()
    pod = build_pod(
        config, broadcast=_drop, provider=ScriptedProvider(), continue_=True, opened=opened
    )
    line = pod.methods.history_line()
    done = time.perf_counter()
    cpu = time.thread_time() - cpu
    pod.controller.transcript.session.close()
    return loaded - start, done - start, cpu, len(line)


async def _reload_off_loop(config: Any) -> tuple[float, float]:
    """One reload that loads in a thread: (reload s, longest loop stall s meanwhile)."""
    from orchestrator.adapters.providers.scripted import ScriptedProvider
    from orchestrator.serving.pod import build_pod, open_session_async

    stall = 0.0
    running = True

    async def ticker() -> None:
        nonlocal stall
        last = time.perf_counter()
        while running:
            await asyncio.sleep(TICK_S)
            now = time.perf_counter()
            stall = max(stall, now - last - TICK_S)
            last = now

    tick = asyncio.create_task(ticker())
    await asyncio.sleep(0)
    start = time.perf_counter()
    opened = await open_session_async(config, continue_=True)
    pod = build_pod(
        config, broadcast=_drop, provider=ScriptedProvider(), continue_=True, opened=opened
    )
    pod.methods.history_line()
    elapsed = time.perf_counter() - start
    await asyncio.sleep(2 * TICK_S)  # the ticker sees the stall build_pod caused
    running = False
    await tick
    pod.controller.transcript.session.close()
    return elapsed, stall


def measure(root: Path, n: int, samples: int) -> dict[str, Any]:
    """Reload an n-item session ``samples`` times, on the thread and off the loop."""
    config = bench_config(root, session=root / f"session-{n}.jsonl")
    write_session(config.session, history_items(n), workspace=root / "ws")
    _reload(config)  # warm: imports, schema builds
    loads: list[float] = []
    reloads: list[float] = []
    cpus: list[float] = []
    size = 0
    for _ in range(samples):
        gc.collect()
        load_s, reload_s, cpu_s, size = _reload(config)
        loads.append(load_s)
        reloads.append(reload_s)
        cpus.append(cpu_s)
    async_reloads: list[float] = []
    stalls: list[float] = []
    for _ in range(samples):
        gc.collect()
        reload_s, stall_s = asyncio.run(_reload_off_loop(config))
        async_reloads.append(reload_s)
        stalls.append(stall_s)
    return {
        "items": n,
        "session_file_bytes": config.session.stat().st_size,
        "history_reply_bytes": size,
        "load": latency_stats(loads),
        "reload": latency_stats(reloads),
        "reload_cpu": latency_stats(cpus),
        "reload_off_loop": latency_stats(async_reloads),
        "loop_stall_ms": latency_stats(stalls),
    }


def run(quick: bool = False) -> Result:
    """The benchmark; ``quick`` reloads one small session a few times."""
    from orchestrator.serving.pod import SWITCH_INTERVAL_S

    sizes = QUICK_SIZES if quick else SIZES
    samples = QUICK_SAMPLES if quick else SAMPLES
    figures: dict[str, Any] = {}
    table = []
    # What a serving process sets (``serve_pod``): the loop gets the GIL back from a loading
    # thread within half a millisecond.
    switch = sys.getswitchinterval()
    sys.setswitchinterval(min(switch, SWITCH_INTERVAL_S))
    with scratch_workspace() as root:
        for n in sizes:
            result = measure(root, n, samples)
            figures[str(n)] = result
            p95 = result["reload"]["p95_ms"]
            table += [
                row(f"load {n:,}-item session (p50)", result["load"]["p50_ms"], "ms"),
                row(
                    f"reload {n:,} items + history reply (p95)",
                    p95,
                    "ms",
                    target=f"≤ {TARGET_P95_MS:g} ms",
                    met=p95 <= TARGET_P95_MS,
                ),
                row(f"CPU of that reload (p95, {n:,} items)", result["reload_cpu"]["p95_ms"], "ms"),
                row(
                    f"reload {n:,} items, loading off the loop (p95)",
                    result["reload_off_loop"]["p95_ms"],
                    "ms",
                ),
                row(
                    f"longest event-loop stall during it (p95, {n:,} items)",
                    result["loop_stall_ms"]["p95_ms"],
                    "ms",
                ),
            ]
    sys.setswitchinterval(switch)
    return {
        "benchmark": NAME,
        "quick": quick,
        "params": {"sizes": list(sizes), "samples": samples},
        "results": figures,
        "table": table,
    }


def _drop(line: bytes) -> None:
    """A broadcast nobody listens to."""


def main() -> None:
    """Print the result as JSON."""
    main_for(run, __doc__ or NAME)


if __name__ == "__main__":
    main()
