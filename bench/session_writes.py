"""Session writes of many pods on one event loop: on the loop, or on writer threads in groups.

``pods`` transcripts (real session files in a scratch directory, the real
:class:`~orchestrator.runtime.transcript.Transcript`) share one event loop, as the pods of a host do.
Each runs ``rounds`` rounds shaped like a turn's: the assistant message with a tool call is
committed, the tool's write-ahead record is written (it must be on disk before the tool
runs), the result and a system note are committed, and the round waits until they are on
disk, as the next request does. A ticker measures how late the loop wakes it: what every
other pod of the host feels while one pod's disk is busy.

Two modes, interleaved over ``repeats``:

* ``on_loop``: each record written and ``fdatasync``'d on the loop (before issue 25);
* ``writer_threads``: records go to the process's writer threads, and the commits of one
  stretch of the loop share one sync (group commit).

Figures per mode: syncs per round, wall time for all rounds, and the loop's lateness
(p50/p99/max). The target (issue 25) is that one slow pod never stalls the others:
``writer_threads`` should keep the loop's worst lateness near the ticker's own noise.

    python -m bench.session_writes [--quick]
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from bench._common import Result, fsync_cost, latency_stats, main_for, row, scratch_workspace

NAME = "session_writes"
PODS = 100
ROUNDS = 20
REPEATS = 3
QUICK = (10, 5, 1)
TICK_S = 0.001


async def _run(root: Path, pods: int, rounds: int, threads: bool) -> dict[str, Any]:
    from orchestrator.adapters.session import SessionWriter, ToolStartRecord, session_write_pool
    from orchestrator.core.history import AssistantMessage, History, SystemMessage, ToolResult
    from orchestrator.core.history import ToolUseBlock as Call

    syncs = 0

    class Counting(SessionWriter):
        def write_lines(self, lines: list[bytes]) -> None:
            nonlocal syncs
            super().write_lines(lines)
            syncs += 1

    from orchestrator.runtime.transcript import Transcript

    transcripts = []
    for n in range(pods):
        path = root / f"{'t' if threads else 'l'}-{n}.jsonl"
        history = History()
        history.new_turn()
        t = Transcript(
            history=history, session=Counting(path, pod=f"p{n}", workspace=root), broadcast=_drop
        )
        if threads:
            t.write_in_background(session_write_pool())
        transcripts.append(t)
    syncs = 0

    async def pod(t: Transcript, n: int) -> None:
        for r in range(rounds):
            call = f"c{n}-{r}"
            t.commit(AssistantMessage(blocks=[Call(id=call, name="bash", input={"cmd": "true"})]))
            await t.record_tool_start(ToolStartRecord(call_id=call, name="bash", started_ms=0))
            await asyncio.sleep(0)  # the tool runs
            t.commit(ToolResult(call_id=call, summary="ok " * 50))
            t.commit(SystemMessage(text="a note"))
            await t.settled()

    late: list[float] = []
    running = True

    async def ticker() -> None:
        last = time.perf_counter()
        while running:
            await asyncio.sleep(TICK_S)
            now = time.perf_counter()
            late.append(max(0.0, now - last - TICK_S))
            last = now

    tick = asyncio.create_task(ticker())
    start = time.perf_counter()
    await asyncio.gather(*(pod(t, n) for n, t in enumerate(transcripts)))
    wall = time.perf_counter() - start
    running = False
    await tick
    for t in transcripts:
        t.close()
    return {
        "syncs_per_round": round(syncs / (pods * rounds), 3),
        "wall_s": round(wall, 3),
        "loop_late_ms": latency_stats(late),
        "loop_late_max_ms": round(max(late, default=0.0) * 1000, 3),
    }


def _drop(line: bytes) -> None:
    """A broadcast nobody listens to."""


def run(quick: bool = False) -> Result:
    """The benchmark; ``quick`` runs a few pods for a few rounds once."""
    pods, rounds, repeats = QUICK if quick else (PODS, ROUNDS, REPEATS)
    samples: dict[str, list[dict[str, Any]]] = {"on_loop": [], "writer_threads": []}
    with scratch_workspace() as root:
        cost = fsync_cost(root)
        for _ in range(repeats):
            for mode, threads in (("on_loop", False), ("writer_threads", True)):
                samples[mode].append(asyncio.run(_run(root, pods, rounds, threads)))
                for f in root.glob("*.jsonl*"):
                    f.unlink()
    figures: dict[str, Any] = {}
    for mode, runs in samples.items():
        best = min(runs, key=lambda r: r["wall_s"])
        figures[mode] = {**best, "wall_s_all": [r["wall_s"] for r in runs]}
    on_loop, threaded = figures["on_loop"], figures["writer_threads"]
    table = [
        row("syncs per round, on the loop", on_loop["syncs_per_round"], ""),
        row("syncs per round, writer threads (group commit)", threaded["syncs_per_round"], ""),
        row("loop lateness p99, on the loop", on_loop["loop_late_ms"]["p99_ms"], "ms"),
        row("loop lateness p99, writer threads", threaded["loop_late_ms"]["p99_ms"], "ms"),
        row("worst loop lateness, on the loop", on_loop["loop_late_max_ms"], "ms"),
        row("worst loop lateness, writer threads", threaded["loop_late_max_ms"], "ms"),
        row("all rounds, on the loop", on_loop["wall_s"], "s"),
        row("all rounds, writer threads", threaded["wall_s"], "s"),
    ]
    return {
        "benchmark": NAME,
        "quick": quick,
        "params": {"pods": pods, "rounds": rounds, "repeats": repeats},
        "fsync_cost": cost,
        "results": figures,
        "table": table,
    }


def main() -> None:
    """Print the result as JSON."""
    main_for(run, __doc__ or NAME)


if __name__ == "__main__":
    main()
