"""The cost of race-free resolution in :class:`orchestrator.adapters.scoped_fs.ScopedFS`.

10,000 ``read_text`` calls of a small file four directories below the workspace, through each
resolver: ``openat2`` (when the kernel has it) and the portable component walk (what runs on
kernels before 5.6, and for any path with a symlink on it); the same read through an in-scope
symlink; a bare ``open``/``read`` by path with no checks at all as the floor; and 1,000
``write_text`` calls (temporary file, fsync, rename). No target: the figures are for comparing.

    python -m bench.fs_read [--quick]
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench._common import Result, latency_stats, main_for, row, scratch_workspace, timed

NAME = "fs_read"
READS = 10_000
QUICK_READS = 200
WRITES = 1_000
QUICK_WRITES = 20
FILE = "a/b/c/d/small.txt"
BODY = "x = 1  # a small file\n" * 8


@contextmanager
def _walk_only() -> Iterator[None]:
    """Make ScopedFS skip openat2, as on a kernel without it (a private switch, for measuring)."""
    from orchestrator.adapters.scoped_fs import resolver

    saved = resolver.openat2_fn
    resolver.openat2_fn = lambda: None  # type: ignore[assignment]
    try:
        yield
    finally:
        resolver.openat2_fn = saved


def _figures(samples: list[float]) -> dict[str, Any]:
    stats = latency_stats(samples)
    return {"mean_us": stats["mean_ms"] * 1000, "median_us": stats["median_ms"] * 1000, **stats}


def measure(ws: Path, reads: int, writes: int) -> dict[str, Any]:
    """Every figure, on a workspace holding FILE and a link ``hop`` to ``a/b``."""
    from orchestrator.adapters.scoped_fs import ScopedFS, resolver

    target = ws / FILE
    target.parent.mkdir(parents=True)
    target.write_text(BODY)
    (ws / "hop").symlink_to("a/b", target_is_directory=True)
    fs = ScopedFS(ws)
    via_link = "hop/c/d/small.txt"
    if fs.read_text(FILE).text != BODY or fs.read_text(via_link).text != BODY:
        raise RuntimeError("the file did not read back")

    def bare() -> bytes:
        with open(target, "rb") as f:
            return f.read()

    figures: dict[str, Any] = {
        "openat2_available": resolver.openat2_fn() is not None,
        "bare_open_read": _figures(timed(bare, reads)),
    }
    if figures["openat2_available"]:
        figures["read_text_openat2"] = _figures(timed(lambda: fs.read_text(FILE), reads))
    with _walk_only():
        figures["read_text_walk"] = _figures(timed(lambda: fs.read_text(FILE), reads))
    figures["read_text_via_symlink"] = _figures(timed(lambda: fs.read_text(via_link), reads))
    figures["write_text"] = _figures(timed(lambda: fs.write_text(FILE, BODY), writes))
    return figures


def run(quick: bool = False) -> Result:
    """The benchmark; ``quick`` does a few hundred calls."""
    reads = QUICK_READS if quick else READS
    writes = QUICK_WRITES if quick else WRITES
    with scratch_workspace() as root:
        figures = measure(root / "ws", reads, writes)
    table = [row("bare open+read by path (no checks)", figures["bare_open_read"]["mean_us"], "µs")]
    if figures["openat2_available"]:
        table.append(
            row("read_text, depth 4, openat2", figures["read_text_openat2"]["mean_us"], "µs")
        )
    table += [
        row("read_text, depth 4, walk", figures["read_text_walk"]["mean_us"], "µs"),
        row("read_text through a symlink", figures["read_text_via_symlink"]["mean_us"], "µs"),
        row("write_text (temp + fsync + rename)", figures["write_text"]["mean_us"], "µs"),
    ]
    return {
        "benchmark": NAME,
        "quick": quick,
        "params": {"reads": reads, "writes": writes, "file": FILE, "bytes": len(BODY)},
        "results": figures,
        "table": table,
    }


def main() -> None:
    """Print the result as JSON."""
    main_for(run, __doc__ or NAME)


if __name__ == "__main__":
    main()
