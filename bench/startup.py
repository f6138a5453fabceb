"""Start-up cost of the command line: ``pod --help``, ``pod run --help``, ``import cli.main``,
and a one-shot ``pod run`` to the model's first request (:mod:`bench._startup_run`).

Each figure is the median wall time of fresh subprocesses. ``python -c pass`` is measured
too, so the CLI's own share is visible, and ``python -c "import anthropic"``: the SDK's import
is the floor of a truly cold ``pod run`` (the pod host must import it before its first
request). A separate subprocess checks that neither importing ``cli.main`` nor running ``pod
--help`` imports the SDK, the UI, the permission parser or the session store
(:data:`MUST_NOT_IMPORT`), and ``-X importtime`` names the slowest imports.

Targets (issue 40, on an idle machine): ``--help`` <= 300 ms; a ``pod run`` whose pod runs
already in a host reaches the API <= 250 ms after the command starts; a cold one (no host)
<= the SDK's import + 300 ms.

    python -m bench.startup [--quick]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench._common import Result, main_for, median, row

NAME = "startup"
RUNS = 10
QUICK_RUNS = 2
RUN_RUNS = 7
"""Samples of each ``pod run`` figure (a cold one takes seconds)."""
HEAVY = (
    "anthropic",
    "textual",
    "ray",
    "bashlex",
    "orchestrator.adapters.session",
    "orchestrator.capabilities.permissions",
    "httpx",
    "rich",
    "typer",
    "pydantic",
    "statemachine",
)
MUST_NOT_IMPORT = HEAVY[:6]
HELP_TARGET_MS = 300.0
WARM_TARGET_MS = 250.0
COLD_MARGIN_MS = 300.0
_REPO = Path(__file__).resolve().parents[1]

_CHECK = """
import atexit, json, sys
heavy = {heavy!r}
def report():
    sys.stderr.write("PBMODS " + json.dumps({{m: m in sys.modules for m in heavy}}) + "\\n")
atexit.register(report)
{body}
"""


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env["PYTHONPATH"] = str(_REPO)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # measure with byte-code caches, as users run it
    return env


def _time(cmd: list[str], runs: int) -> dict[str, Any]:
    samples: list[float] = []
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, cwd=_REPO, env=_env(), timeout=60)
        samples.append(time.perf_counter() - start)
        if done.returncode != 0:
            raise RuntimeError(f"{cmd} exited {done.returncode}: {done.stderr.decode()[-500:]}")
    ms = [s * 1000 for s in samples]
    return {"median_ms": median(ms), "min_ms": min(ms), "runs": len(ms)}


def _modules(body: str) -> dict[str, bool]:
    code = _CHECK.format(heavy=HEAVY, body=body)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, cwd=_REPO, env=_env(), timeout=60
    )
    for line in done.stderr.decode().splitlines():
        if line.startswith("PBMODS "):
            found: dict[str, bool] = json.loads(line[len("PBMODS ") :])
            return found
    raise RuntimeError(f"module check failed: {done.stderr.decode()[-500:]}")


def _importtime(top: int = 10) -> list[dict[str, Any]]:
    """The slowest imports of ``cli.main`` by cumulative time (first three nesting levels)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import cli.main"],
        capture_output=True,
        cwd=_REPO,
        env=_env(),
        timeout=60,
    )
    rows: list[dict[str, Any]] = []
    for line in done.stderr.decode().splitlines():
        if not line.startswith("import time:") or "[us]" in line:
            continue
        self_us, cumulative_us, name = line[len("import time:") :].split("|", 2)
        depth = (len(name) - len(name.lstrip(" ")) - 1) // 2
        if depth > 2:
            continue
        rows.append(
            {
                "module": name.strip(),
                "self_ms": int(self_us) / 1000,
                "cumulative_ms": int(cumulative_us) / 1000,
                "depth": depth,
            }
        )
    rows.sort(key=lambda r: r["cumulative_ms"], reverse=True)
    return [r for r in rows if r["module"] != "cli.main"][:top]


def _pod_command(*args: str) -> list[str]:
    script = Path(sys.executable).parent / "pod"
    if script.exists():
        return [str(script), *args]
    return [sys.executable, "-m", "cli", *args]


_HELP_BODY = (
    "import sys\nsys.argv = ['pod', {args}]\nfrom cli.main import main\n"
    "try:\n    main()\nexcept SystemExit:\n    pass"
)


def run(quick: bool = False) -> Result:
    """The benchmark; ``quick`` takes two runs of each command."""
    from bench._startup_run import run_figures

    runs = QUICK_RUNS if quick else RUNS
    run_runs = QUICK_RUNS if quick else RUN_RUNS
    pod_cmd = _pod_command("--help")
    bare = _time([sys.executable, "-c", "pass"], runs)
    imp = _time([sys.executable, "-c", "import cli.main"], runs)
    helps = _time(pod_cmd, runs)
    run_helps = _time(_pod_command("run", "--help"), runs)
    on_import = _modules("import cli.main")
    on_help = _modules(_HELP_BODY.format(args="'--help'"))
    on_run_help = _modules(_HELP_BODY.format(args="'run', '--help'"))
    loaded = {m for m in MUST_NOT_IMPORT if on_import[m] or on_help[m] or on_run_help[m]}
    clean = not loaded
    slowest = _importtime()
    heavy_loaded = sorted(loaded)
    pod_run = run_figures(run_runs)
    floor = pod_run["import_anthropic"]  # timed beside the cold runs
    cold = pod_run["cold_first_request"]["median_ms"]
    warm = pod_run["warm_live_first_request"]["median_ms"]
    cold_target = floor["median_ms"] + COLD_MARGIN_MS
    table = [
        row("python -c pass", bare["median_ms"], "ms"),
        row("python -c 'import cli.main'", imp["median_ms"], "ms"),
        row(
            "pod --help",
            helps["median_ms"],
            "ms",
            target=f"<= {HELP_TARGET_MS:.0f}",
            met=helps["median_ms"] <= HELP_TARGET_MS,
        ),
        row(
            "pod run --help",
            run_helps["median_ms"],
            "ms",
            target=f"<= {HELP_TARGET_MS:.0f}",
            met=run_helps["median_ms"] <= HELP_TARGET_MS,
        ),
        row("pod --help minus bare python", helps["median_ms"] - bare["median_ms"], "ms"),
        row(
            "heavy modules not imported by --help",
            0 if clean else len(heavy_loaded),
            "loaded",
            target="0",
            met=clean,
            note=", ".join(heavy_loaded) or None,
        ),
        row("python -c 'import anthropic' (the floor)", floor["median_ms"], "ms"),
        row(
            "pod run, cold (no host): first request",
            cold,
            "ms",
            target=f"<= floor + {COLD_MARGIN_MS:.0f} ({cold_target:.0f})",
            met=cold <= cold_target,
        ),
        row("pod run, cold: to exit", pod_run["cold_total"]["median_ms"], "ms"),
        row(
            "pod run, host up, pod loaded by the run: first request",
            pod_run["warm_load_first_request"]["median_ms"],
            "ms",
        ),
        row(
            "pod run, pod running in the host: first request",
            warm,
            "ms",
            target=f"<= {WARM_TARGET_MS:.0f}",
            met=warm <= WARM_TARGET_MS,
        ),
        row("pod run, pod running: to exit", pod_run["warm_live_total"]["median_ms"], "ms"),
    ]
    if slowest:
        top = slowest[0]
        table.append(row(f"slowest import: {top['module']}", top["cumulative_ms"], "ms"))
    return {
        "benchmark": NAME,
        "quick": quick,
        "params": {"runs": runs, "run_runs": run_runs, "pod_command": pod_cmd},
        "results": {
            "python_bare": bare,
            "import_cli_main": imp,
            "pod_help": helps,
            "pod_run_help": run_helps,
            "import_anthropic": floor,
            "modules_after_import": on_import,
            "modules_after_help": on_help,
            "modules_after_run_help": on_run_help,
            "heavy_free": clean,
            "slowest_imports": slowest,
            "pod_run": pod_run,
        },
        "table": table,
    }


def main() -> None:
    """Print the result as JSON."""
    main_for(run, __doc__ or NAME)


if __name__ == "__main__":
    main()
