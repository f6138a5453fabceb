"""Run every benchmark, print one table, write ``bench/results/latest.json``.

Each benchmark runs in its own subprocess (``python -m bench.<name>``), so imports, memory and
event loops never leak from one into the next; a benchmark that fails is reported and the
others still run.

    python -m bench [--quick] [--only NAME[,NAME...]] [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench import BENCHMARKS

_REPO = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results" / "latest.json"


def run_one(name: str, *, quick: bool, timeout: float = 600) -> dict[str, Any]:
    """Run ``python -m bench.<name>`` and parse its JSON (or describe its failure)."""
    cmd = [sys.executable, "-m", f"bench.{name}"] + (["--quick"] if quick else [])
    env = {**os.environ, "PYTHONPATH": str(_REPO)}
    start = time.perf_counter()
    try:
        done = subprocess.run(cmd, capture_output=True, cwd=_REPO, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"benchmark": name, "error": f"timed out after {timeout:g} s"}
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        return {
            "benchmark": name,
            "error": f"exit {done.returncode}",
            "stderr": done.stderr.decode(errors="replace")[-4000:],
            "seconds": elapsed,
        }
    try:
        result: dict[str, Any] = json.loads(done.stdout.decode().strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"benchmark": name, "error": "no JSON on stdout", "seconds": elapsed}
    result["seconds"] = elapsed
    return result


def fmt(value: Any) -> str:
    """A compact number for the table."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        magnitude = abs(value)
        if magnitude >= 1000:
            return f"{value:,.0f}"
        if magnitude >= 100:
            return f"{value:.1f}"
        if magnitude >= 1:
            return f"{value:.2f}"
        return f"{value:.3f}"
    return str(value)


def render(results: list[dict[str, Any]]) -> None:
    """Print the summary table with rich."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title="pod-orchestrator benchmarks", show_lines=False)
    table.add_column("benchmark", style="bold")
    table.add_column("metric", no_wrap=True)
    table.add_column("value", justify="right")
    table.add_column("unit")
    table.add_column("target")
    table.add_column("met", justify="center")
    table.add_column("note", style="dim", overflow="fold", max_width=44)
    for result in results:
        name = result["benchmark"]
        if "error" in result:
            table.add_row(name, "FAILED", "", "", "", "✗", result["error"])
            continue
        first = True
        for line in result.get("table", []):
            met = line.get("met")
            mark = "" if "target" not in line else ("[green]✓[/]" if met else "[red]✗[/]")
            table.add_row(
                f"{name} ({result['seconds']:.0f} s)" if first else "",
                line["metric"],
                fmt(line.get("value")),
                line.get("unit", ""),
                line.get("target", ""),
                mark,
                line.get("note", "") or "",
            )
            first = False
        table.add_section()
    Console(width=max(160, Console().width)).print(table)


def main(argv: list[str] | None = None) -> int:
    """Run the selected benchmarks; exit 1 if any failed to run (never for a missed target)."""
    parser = argparse.ArgumentParser(description="Run the pod-orchestrator benchmarks.")
    parser.add_argument("--quick", action="store_true", help="smoke-sized runs")
    parser.add_argument("--only", default="", help="comma-separated benchmark names")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where to write the JSON")
    args = parser.parse_args(argv)
    names = [n for n in args.only.split(",") if n] or list(BENCHMARKS)
    unknown = sorted(set(names) - set(BENCHMARKS))
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(unknown)}; known: {', '.join(BENCHMARKS)}")
    results = []
    start = time.perf_counter()
    for name in names:
        print(f"running bench.{name} …", file=sys.stderr, flush=True)
        results.append(run_one(name, quick=args.quick))
    total = time.perf_counter() - start
    render(results)
    missed = [
        f"{r['benchmark']}: {line['metric']}"
        for r in results
        for line in r.get("table", [])
        if "target" in line and not line.get("met")
    ]
    summary = {
        "quick": args.quick,
        "seconds": total,
        "targets_missed": missed,
        "failed": [r["benchmark"] for r in results if "error" in r],
        "benchmarks": {r["benchmark"]: r for r in results},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(summary, indent=2, default=str) + "\n")
    print(
        f"{len(results)} benchmarks in {total:.0f} s; {len(missed)} target(s) missed; "
        f"JSON: {args.out}",
        file=sys.stderr,
    )
    return 1 if summary["failed"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
