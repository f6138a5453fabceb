"""Shared pieces of the benchmarks: statistics, a scratch workspace, pods, and history builders.

Every benchmark module exposes ``run(quick: bool) -> dict`` and a ``main()`` that prints that
dict as one JSON object. The dict always has ``benchmark``, ``quick``, ``results`` (free-form
figures) and ``table`` (rows for the summary table: ``metric``, ``value``, ``unit`` and,
where a target applies, ``target`` and ``met``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

TableRow = dict[str, Any]
Result = dict[str, Any]

# -- statistics --------------------------------------------------------------------------------


def percentile(samples: list[float], q: float) -> float:
    """The ``q``-th percentile (0-100) with linear interpolation, like numpy's default."""
    if not samples:
        raise ValueError("no samples")
    ordered = sorted(samples)
    if len(ordered) == 1:
        return ordered[0]
    pos = (len(ordered) - 1) * q / 100.0
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def latency_stats(samples_s: list[float]) -> dict[str, float]:
    """n, median, p50/p95/p99, min, max and mean of samples given in seconds, in ms."""
    ms = [s * 1000.0 for s in samples_s]
    return {
        "n": len(ms),
        "median_ms": statistics.median(ms),
        "p50_ms": percentile(ms, 50),
        "p95_ms": percentile(ms, 95),
        "p99_ms": percentile(ms, 99),
        "min_ms": min(ms),
        "max_ms": max(ms),
        "mean_ms": statistics.fmean(ms),
    }


def timed(fn: Callable[[], Any], n: int) -> list[float]:
    """The wall time of ``n`` calls of ``fn``, one sample (in seconds) per call."""
    out: list[float] = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def median(values: list[float]) -> float:
    """The median of a non-empty list."""
    return float(statistics.median(values))


def row(
    metric: str,
    value: float | None,
    unit: str,
    *,
    target: str | None = None,
    met: bool | None = None,
    note: str | None = None,
) -> TableRow:
    """One line of the summary table."""
    out: TableRow = {"metric": metric, "value": value, "unit": unit}
    if target is not None:
        out["target"] = target
        out["met"] = met
    if note:
        out["note"] = note
    return out


def ratio(ours: float | None, theirs: float | None) -> float | None:
    """``ours / theirs``, or None when either side is missing or zero."""
    if ours is None or theirs is None or theirs <= 0:
        return None
    return ours / theirs


def fsync_cost(directory: Path, n: int = 100) -> dict[str, float]:
    """Median and p99 of ``write + fsync`` of one small line in ``directory``, in µs."""
    path = directory / f".fsync-probe-{os.getpid()}"
    samples: list[float] = []
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        for _ in range(n):
            start = time.perf_counter()
            os.write(fd, b'{"type": "probe"}\n')
            os.fsync(fd)
            samples.append(time.perf_counter() - start)
    finally:
        os.close(fd)
        path.unlink(missing_ok=True)
    us = [s * 1e6 for s in samples]
    return {"median_us": median(us), "p99_us": percentile(us, 99)}


# -- the command line -----------------------------------------------------------------------------


def parse_args(description: str, argv: list[str] | None = None) -> argparse.Namespace:
    """The options every benchmark takes."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="a small smoke run (for the tests)")
    parser.add_argument("--profile", action="store_true", help="print a cProfile to stderr")
    return parser.parse_args(argv)


def emit(result: Result) -> None:
    """Print a benchmark's result as one JSON object on stdout."""
    result.setdefault("env", environment())
    json.dump(result, sys.stdout, default=str)
    sys.stdout.write("\n")
    sys.stdout.flush()


def environment() -> dict[str, Any]:
    """Where the figures were measured."""
    try:
        load: list[float] | None = list(os.getloadavg())
    except OSError:
        load = None
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "loadavg": load,
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def main_for(run: Callable[[bool], Result], description: str) -> None:
    """The ``main()`` of a benchmark module: parse options, run, print JSON."""
    args = parse_args(description)
    if args.profile:
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        result = profiler.runcall(run, args.quick)
        stats = pstats.Stats(profiler, stream=sys.stderr)
        stats.sort_stats("cumulative").print_stats(40)
        stats.sort_stats("tottime").print_stats(25)
    else:
        result = run(args.quick)
    emit(result)


# -- a scratch workspace and pods ------------------------------------------------------------------


@contextlib.contextmanager
def scratch_workspace(prefix: str = "pb") -> Iterator[Path]:
    """A short-named temporary folder holding ``ws/`` (a tiny project) and ``state/``.

    ``XDG_STATE_HOME`` points into it for the duration, so no session leaks into the home
    folder. The folder is short so socket paths inside it stay under the Unix limit.
    """
    root = Path(tempfile.mkdtemp(prefix=prefix))
    old_state = os.environ.get("XDG_STATE_HOME")
    os.environ["XDG_STATE_HOME"] = str(root / "state")
    try:
        ws = root / "ws"
        (ws / "src").mkdir(parents=True)
        (ws / "README.md").write_text("# Bench\n\nA tiny project for benchmarks.\n")
        (ws / "src" / "app.py").write_text("def main():\n    return 42\n")
        yield root
    finally:
        if old_state is None:
            os.environ.pop("XDG_STATE_HOME", None)
        else:
            os.environ["XDG_STATE_HOME"] = old_state
        shutil.rmtree(root, ignore_errors=True)


def bench_config(root: Path, **overrides: Any) -> Any:
    """A scripted-provider pod config for the workspace under ``root``."""
    from orchestrator.config.model import PodConfig

    overrides.setdefault("session", root / "session.jsonl")
    return PodConfig(workspace=root / "ws", name="bench", provider="scripted", **overrides)


@contextlib.asynccontextmanager
async def served_pod(config: Any, provider: Any, socket_path: Path) -> AsyncIterator[Any]:
    """Serve a pod in this process on a real Unix socket; shut it down afterwards."""
    from orchestrator.serving.client import PodClient
    from orchestrator.serving.pod import serve_pod

    ready = asyncio.Event()
    task = asyncio.create_task(
        serve_pod(config, socket_path=socket_path, provider=provider, ready=ready)
    )
    waiter = asyncio.create_task(ready.wait())
    await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    if task.done():
        waiter.cancel()
        task.result()
    try:
        yield task
    finally:
        if not task.done():
            with contextlib.suppress(Exception):
                client = await PodClient.connect(socket_path)
                await client.send("shutdown")
                await client.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(task), 10)
        if not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                await task


class NoopTool:
    """A trivial in-process tool: isolates the orchestrator's cost from any real tool's."""

    name = "noop"
    side_effects = False
    description = "Does nothing and says ok."
    input_schema: dict[str, Any] = {"type": "object", "properties": {}}  # noqa: RUF012

    async def run(self, args: dict[str, Any], ctx: Any) -> Any:
        """Return a tiny result."""
        from orchestrator.capabilities.tools.base import ToolOutput

        return ToolOutput(summary="noop: ok", content="ok")


# -- history builders --------------------------------------------------------------------------------

_RESULT_BODY = "\n".join(
    f"{n:4d}  line {n} of a file the model read, with some code" for n in range(24)
)
_ANSWER = (
    "Here is what I found: the function parses the input, validates it against the schema and "
    "returns the normalised record. The bug is in the second branch, where the default is not "
    "applied; I changed it and the tests pass."
)


def history_items(n: int) -> list[Any]:
    """``n`` committed items shaped like real turns, wire-valid and with no open tool call.

    Each turn is: user message, assistant (text + ``read_file`` call), its result (~1.4 KB),
    assistant (``grep`` call), its result, assistant answer. Items carry ``seq`` 1..n and
    their turn number, as if loaded from a session.
    """
    from orchestrator.core.history import (
        AssistantMessage,
        TextBlock,
        ToolResult,
        ToolUseBlock,
        UserMessage,
    )
    from orchestrator.core.segments import TextSegment

    items: list[Any] = []
    turn = 0
    while len(items) < n:
        turn += 1
        text = f"Turn {turn}: please look at module_{turn}.py and fix the failing test."
        a, b = f"toolu_hist_{turn}_a", f"toolu_hist_{turn}_b"
        items += [
            UserMessage(segments=[TextSegment(text=text)], text=text),
            AssistantMessage(
                blocks=[
                    TextBlock(text="Let me read the module first."),
                    ToolUseBlock(id=a, name="read_file", input={"path": f"src/module_{turn}.py"}),
                ],
                stop_reason="tool_use",
            ),
            ToolResult(
                call_id=a,
                summary=f"read_file: src/module_{turn}.py — 24 lines",
                content=f"# src/module_{turn}.py\n{_RESULT_BODY}",  # distinct, like real files
            ),
            AssistantMessage(
                blocks=[ToolUseBlock(id=b, name="grep", input={"pattern": "def parse"})],
                stop_reason="tool_use",
            ),
            ToolResult(call_id=b, summary="grep: 3 matches", content="src/a.py:1\nsrc/b.py:2\n"),
            AssistantMessage(blocks=[TextBlock(text=_ANSWER)], stop_reason="end_turn"),
        ]
    items = items[:n]
    if items and isinstance(items[-1], AssistantMessage) and items[-1].tool_uses:
        # Never leave an open call: the next turn would run it first.
        items[-1] = AssistantMessage(blocks=[TextBlock(text=_ANSWER)], stop_reason="end_turn")
    out: list[Any] = []
    turn = 0
    for seq, item in enumerate(items, start=1):
        if isinstance(item, UserMessage):
            turn += 1
        out.append(_restamp(item, seq, turn))
    return out


def _restamp(item: Any, seq: int, turn: int) -> Any:
    from dataclasses import replace

    return replace(item, seq=seq, turn=turn)


def write_session(path: Path, items: list[Any], *, pod: str = "bench", workspace: Path) -> None:
    """Write a session file holding ``items`` (and a ``turn_end`` per turn), without fsync."""
    from orchestrator.adapters.session import SessionHeader
    from orchestrator.core.history import item_to_json

    header = SessionHeader(pod=pod, workspace=str(workspace), created_ms=int(time.time() * 1000))
    lines = [header.model_dump_json()]
    turns: set[int] = set()
    for item in items:
        lines.append(json.dumps({"type": "item", "item": item_to_json(item)}))
        turns.add(item.turn)
    for turn in sorted(turns):
        lines.append(json.dumps({"type": "turn_end", "turn": turn, "result": "finished"}))
    path.write_text("\n".join(lines) + "\n")
