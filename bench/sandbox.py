"""What the sandbox costs a command: ``true`` and an ``ls -R`` of 1,000 files, each run with
``/bin/bash -c`` as ``bash`` runs it, unsandboxed and in the sandbox (the pod's own
bubblewrap command line), interleaved; the overhead is the difference of the medians.

    python -m bench.sandbox [--quick]
"""

from __future__ import annotations

import subprocess
import tempfile
import time
from pathlib import Path

from bench._common import Result, latency_stats, main_for, median, row
from orchestrator.sandbox.bwrap import (
    SandboxSpec,
    SandboxUnavailable,
    find_bwrap,
    hidden_paths,
    read_only_in,
    sandbox_argv,
)

NAME = "sandbox"
RUNS = 60
QUICK_RUNS = 5
FILES = 1000
TARGET_MS = 15.0


def _tree(root: Path, files: int) -> None:
    for n in range(files):
        folder = root / f"d{n % 20:02d}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{n:04d}.txt").write_text("x\n")


def _time(argv: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, capture_output=True, timeout=60, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{argv[-1]!r} failed: {done.stderr.decode()[-300:]}")
    return elapsed


def run(quick: bool = False) -> Result:
    """The benchmark; ``quick`` takes a few runs of each."""
    runs = QUICK_RUNS if quick else RUNS
    try:
        bwrap = find_bwrap()
    except SandboxUnavailable as exc:
        return {
            "benchmark": NAME,
            "quick": quick,
            "params": {"runs": runs},
            "results": {"available": False, "why": str(exc)},
            "table": [row("sandbox available", 0, "bool", note=str(exc))],
        }
    with tempfile.TemporaryDirectory(prefix="bench-sbx") as tmp:
        base = Path(tmp)
        workspace = base / "ws"
        workspace.mkdir()
        _tree(workspace, 100 if quick else FILES)
        spec = SandboxSpec(
            workspace=workspace,
            hidden=hidden_paths(Path.home(), base / "state", base / "run", base / "cfg"),
            extra_ro=read_only_in(workspace),
        )
        results: dict[str, object] = {"available": True, "bwrap": bwrap}
        table = []
        for label, script in (("true", "true"), ("ls -R", "ls -R > /dev/null")):
            shell = ["/bin/bash", "-c", script]
            boxed = sandbox_argv(bwrap, spec, shell)
            plain_s: list[float] = []
            boxed_s: list[float] = []
            for _ in range(runs):  # interleaved: both see the same machine load
                plain_s.append(_time(shell, workspace))
                boxed_s.append(_time(boxed, workspace))
            overhead = median([b * 1000 for b in boxed_s]) - median([p * 1000 for p in plain_s])
            results[label] = {
                "plain": latency_stats(plain_s),
                "sandboxed": latency_stats(boxed_s),
                "overhead_ms": overhead,
            }
            table.append(
                row(
                    f"sandbox overhead: {label}",
                    overhead,
                    "ms",
                    target=f"≤ {TARGET_MS:g}",
                    met=overhead <= TARGET_MS,
                )
            )
    return {
        "benchmark": NAME,
        "quick": quick,
        "params": {"runs": runs, "files": 100 if quick else FILES},
        "results": results,
        "table": table,
    }


def main() -> None:
    """Print the result as JSON."""
    main_for(run, __doc__ or NAME)


if __name__ == "__main__":
    main()
