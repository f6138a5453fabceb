"""Memory of a 10,000-item history: the items, their wire form, and the process RSS.

``tracemalloc`` measures what building the items + :class:`History` allocates, then what
the wire form adds (``WireBuilder.build``, which the controller keeps between requests). A
second pass without tracemalloc reads the RSS growth from ``/proc/self/status``. Items are
the realistic mix of :func:`bench._common.history_items` (tool results of ~1.4 KB); the
wire form is pruned as the pod sends it (``prune_keep_turns`` 3), the unpruned one is
reported beside it.

For the same history it also times what a long session costs outside a round: loading it
from its session file (``pod serve --continue``) and encoding the ``history`` event.

    python -m bench.memory [--quick]
"""

from __future__ import annotations

import gc
import time
import tracemalloc
from pathlib import Path
from typing import Any

from bench._common import (
    Result,
    history_items,
    main_for,
    row,
    scratch_workspace,
    write_session,
)

NAME = "memory"
ITEMS = 10_000
QUICK_ITEMS = 500


def rss_bytes() -> int | None:
    """The resident set size of this process, from ``/proc`` (None elsewhere)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


KEEP_TURNS = 3
"""The pod's default ``prune_keep_turns``: the wire form the controller keeps is pruned."""


def _bound(history: Any) -> int:
    from orchestrator.core.repair import prune_before_turn

    return prune_before_turn(history.turn + 1, KEEP_TURNS)


def _build(n: int) -> tuple[Any, Any]:
    from orchestrator.core.history import History
    from orchestrator.core.wire import WireBuilder

    history = History(history_items(n))
    wire = WireBuilder().build(history.items, prune_before_turn=_bound(history))
    return history, wire


def traced(n: int) -> dict[str, Any]:
    """Bytes held by the items + History, then by the wire form, via tracemalloc."""
    from orchestrator.core.history import History
    from orchestrator.core.wire import WireBuilder

    # Import-time allocations must not count: warm everything up first.
    _build(10)
    gc.collect()
    tracemalloc.start()
    try:
        base, _ = tracemalloc.get_traced_memory()
        history = History(history_items(n))
        after_items, peak_items = tracemalloc.get_traced_memory()
        wire = WireBuilder().build(history.items, prune_before_turn=_bound(history))
        after_wire, peak_wire = tracemalloc.get_traced_memory()
        unpruned = WireBuilder().build(history.items)
        after_unpruned, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    items_bytes = after_items - base
    wire_bytes = after_wire - after_items
    del unpruned
    return {
        "items": len(history),
        "wire_messages": len(wire),
        "history_bytes": items_bytes,
        "wire_bytes": wire_bytes,
        "wire_unpruned_bytes": after_unpruned - after_wire,
        "total_bytes": items_bytes + wire_bytes,
        "peak_bytes": max(peak_items, peak_wire) - base,
        "bytes_per_item": (items_bytes + wire_bytes) / max(len(history), 1),
    }


def rss_delta(n: int) -> dict[str, Any]:
    """RSS growth while building the same history and wire form (no tracemalloc)."""
    _build(10)
    gc.collect()
    before = rss_bytes()
    history, wire = _build(n)
    gc.collect()
    after = rss_bytes()
    delta = after - before if before is not None and after is not None else None
    del history, wire
    return {"rss_before_bytes": before, "rss_after_bytes": after, "rss_delta_bytes": delta}


def session_costs(n: int) -> dict[str, Any]:
    """Load time of an n-item session file and the cost of the ``history`` event."""
    from orchestrator.adapters.session import load_session
    from orchestrator.core.history import item_to_json
    from orchestrator.protocol import HistoryData, encode_event

    items = history_items(n)
    with scratch_workspace() as root:
        path = root / "long.jsonl"
        write_session(path, items, workspace=root / "ws")
        size = path.stat().st_size
        start = time.perf_counter()
        loaded = load_session(path)
        load_s = time.perf_counter() - start
    start = time.perf_counter()
    line = encode_event(
        "history", HistoryData(items=[item_to_json(i) for i in items], greeting="bench")
    )
    history_s = time.perf_counter() - start
    return {
        "session_file_bytes": size,
        "session_load_ms": load_s * 1000,
        "loaded_items": len(loaded.items),
        "history_event_ms": history_s * 1000,
        "history_event_bytes": len(line),
    }


def run(quick: bool = False) -> Result:
    """The benchmark; ``quick`` uses a few hundred items."""
    n = QUICK_ITEMS if quick else ITEMS
    rss = rss_delta(n)
    traced_fig = traced(n)
    session = session_costs(n)
    mib = 1024 * 1024
    table = [
        row(f"tracemalloc: {n:,} items + History", traced_fig["history_bytes"] / mib, "MiB"),
        row("tracemalloc: + wire form (pruned, keep 3)", traced_fig["wire_bytes"] / mib, "MiB"),
        row("tracemalloc: wire form unpruned", traced_fig["wire_unpruned_bytes"] / mib, "MiB"),
        row("bytes per item (items + wire)", traced_fig["bytes_per_item"], "B"),
        row(
            "RSS delta (items + wire)",
            rss["rss_delta_bytes"] / mib if rss["rss_delta_bytes"] is not None else None,
            "MiB",
        ),
        row(f"load {n:,}-item session file", session["session_load_ms"], "ms"),
        row(f"encode history event ({n:,} items)", session["history_event_ms"], "ms"),
    ]
    return {
        "benchmark": NAME,
        "quick": quick,
        "params": {"items": n},
        "results": {"tracemalloc": traced_fig, "rss": rss, "session": session},
        "table": table,
    }


def main() -> None:
    """Print the result as JSON."""
    main_for(run, __doc__ or NAME)


if __name__ == "__main__":
    main()
