"""Context assembly: resolving ``@file`` refs and pruning a long history.

* ``@file``: :func:`orchestrator.runtime.file_refs.resolve_segments` on a submit with 5 refs to
  16 KB files (read through the scoped file system, capped, turned into system messages).
  Target < 10 ms.
* pruning 10,000 items at the start of a new turn: the prune bound (``prune_before_turn`` +
  ``prunable_tokens``, as ``Controller.wire_messages`` does when the bound moves) plus a full
  :func:`orchestrator.core.wire.to_wire` with pruned results. Target < 5 ms. The incremental
  :class:`orchestrator.core.wire.WireBuilder` (one round appended, bound unchanged) and
  ``validate_wire`` on the same messages (run before every request) are reported beside it.

    python -m bench.context [--quick]
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from bench._common import (
    Result,
    history_items,
    latency_stats,
    main_for,
    row,
    scratch_workspace,
    timed,
)

NAME = "context"
REFS = 5
REF_BYTES = 16 * 1024
ITEMS = 10_000
QUICK_ITEMS = 600
KEEP_TURNS = 3
TARGET_REFS_MS = 10.0
TARGET_PRUNE_MS = 5.0


def file_refs(root: Path, repeats: int) -> dict[str, Any]:
    """Resolve a submit with REFS ``@file`` refs of REF_BYTES each."""
    from orchestrator.adapters.scoped_fs import ScopedFS
    from orchestrator.core.segments import FileRefSegment, Segment, TextSegment
    from orchestrator.runtime.file_refs import resolve_segments

    ws = root / "ws"
    line = "x = compute(alpha, beta)  # a line of code in a sixteen kilobyte file\n"
    body = (line * (REF_BYTES // len(line) + 1))[:REF_BYTES]
    segments: list[Segment] = [TextSegment(text="compare these:")]
    for n in range(REFS):
        (ws / "src" / f"ref_{n}.py").write_text(body)
        segments += [TextSegment(text=" "), FileRefSegment(path=f"src/ref_{n}.py")]
    fs = ScopedFS(ws)
    result = resolve_segments(fs, segments, max_bytes=REF_BYTES)
    if len(result.items) != REFS or result.failures:
        raise RuntimeError(f"refs did not resolve: {result.failures}")
    stats = latency_stats(
        timed(lambda: resolve_segments(fs, segments, max_bytes=REF_BYTES), repeats)
    )
    return {
        "refs": REFS,
        "bytes_per_ref": REF_BYTES,
        "resolved": len(result.items),
        "attached_chars": sum(len(i.text) for i in result.items),
        **stats,
    }


def pruning(n: int, repeats: int) -> dict[str, Any]:
    """Prune bound + full wire build of an n-item history, and the incremental alternative."""
    from orchestrator.core.history import (
        AssistantMessage,
        History,
        ToolResult,
        ToolUseBlock,
        UserMessage,
    )
    from orchestrator.core.repair import prunable_tokens, prune_before_turn
    from orchestrator.core.validator import validate_wire
    from orchestrator.core.wire import WireBuilder, to_wire

    history = History(history_items(n))
    history.new_turn()  # a new turn starts: this is when the bound moves
    items = history.items
    bound = prune_before_turn(history.turn, KEEP_TURNS)

    def bound_only() -> int:
        b = prune_before_turn(history.turn, KEEP_TURNS)
        return prunable_tokens(items, b)

    def full() -> Any:
        b = prune_before_turn(history.turn, KEEP_TURNS)
        prunable_tokens(items, b)
        return to_wire(items, prune_before_turn=b)

    wire = full()
    pruned_results = sum(
        1
        for m in wire
        for b in m["content"]
        if b.get("type") == "tool_result" and "\n" not in str(b.get("content"))
    )
    bound_stats = latency_stats(timed(bound_only, repeats))
    full_stats = latency_stats(timed(full, repeats))
    validate_stats = latency_stats(timed(lambda: validate_wire(wire), max(3, repeats // 4)))

    builder = WireBuilder()
    builder.build(items, prune_before_turn=bound)
    incremental: list[float] = []
    for k in range(repeats):
        call_id = f"toolu_bench_inc_{k}"
        history.append(
            AssistantMessage(
                blocks=[ToolUseBlock(id=call_id, name="noop", input={})], stop_reason="tool_use"
            )
        )
        history.append(ToolResult(call_id=call_id, summary="noop: ok", content="ok"))
        start = time.perf_counter()
        builder.build(items, prune_before_turn=bound)
        incremental.append(time.perf_counter() - start)
    # What the pod does when a turn starts: the bound moves one turn and the builder rebuilds
    # only the turns that left the window, plus the prunable-token estimate for the record.
    moved: list[float] = []
    for k in range(repeats):
        history.new_turn()
        history.append(UserMessage(text=f"turn {k}"))
        start = time.perf_counter()
        b = prune_before_turn(history.turn, KEEP_TURNS)
        prunable_tokens(items, b)
        builder.build(items, prune_before_turn=b)
        moved.append(time.perf_counter() - start)
    return {
        "items": n,
        "keep_turns": KEEP_TURNS,
        "bound_moved_incremental": latency_stats(moved),
        "prune_before_turn": bound,
        "wire_messages": len(wire),
        "pruned_results": pruned_results,
        "bound_computation": bound_stats,
        "full_build": full_stats,
        "incremental_build": latency_stats(incremental),
        "validate_wire": validate_stats,
    }


def run(quick: bool = False) -> Result:
    """The benchmark; ``quick`` uses a short history and few repeats."""
    n = QUICK_ITEMS if quick else ITEMS
    repeats = 5 if quick else 100
    with scratch_workspace() as root:
        refs = file_refs(root, repeats)
    prune = pruning(n, 5 if quick else 40)
    full_ms = prune["full_build"]["median_ms"]
    moved_ms = prune["bound_moved_incremental"]["median_ms"]
    table = [
        row(
            f"resolve {REFS} @file refs × 16 KB (median)",
            refs["median_ms"],
            "ms",
            target=f"< {TARGET_REFS_MS:g} ms",
            met=refs["median_ms"] < TARGET_REFS_MS,
        ),
        row(f"resolve {REFS} @file refs p99", refs["p99_ms"], "ms"),
        row(f"prune bound ({n:,} items)", prune["bound_computation"]["median_ms"], "ms"),
        row(f"prune bound + full to_wire ({n:,} items)", full_ms, "ms"),
        row(
            f"prune as the pod does: bound moves a turn ({n:,} items)",
            moved_ms,
            "ms",
            target=f"< {TARGET_PRUNE_MS:g} ms",
            met=moved_ms < TARGET_PRUNE_MS,
        ),
        row("incremental WireBuilder (+1 round)", prune["incremental_build"]["median_ms"], "ms"),
        row(
            f"validate_wire ({prune['wire_messages']:,} msgs)",
            prune["validate_wire"]["median_ms"],
            "ms",
        ),
    ]
    return {
        "benchmark": NAME,
        "quick": quick,
        "params": {"refs": REFS, "ref_bytes": REF_BYTES, "items": n, "repeats": repeats},
        "results": {"file_refs": refs, "pruning": prune},
        "table": table,
    }


def main() -> None:
    """Print the result as JSON."""
    main_for(run, __doc__ or NAME)


if __name__ == "__main__":
    main()
