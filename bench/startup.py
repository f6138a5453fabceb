"""Start-up cost of the command line: ``pod --help`` and ``import cli.main``.

Each figure is the median wall time of fresh subprocesses. ``python -c pass`` is measured
too, so the CLI's own share is visible. A separate subprocess checks that neither importing
``cli.main`` nor running ``pod --help`` imports ``anthropic`` or ``textual`` (bench/README.md,
Reference figures: ~1 s and ~0.1 s), and ``-X importtime`` names the slowest imports.

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
HEAVY = ("anthropic", "textual", "httpx", "rich", "typer", "pydantic", "statemachine")
MUST_NOT_IMPORT = ("anthropic", "textual")
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


def _pod_command() -> list[str]:
    script = Path(sys.executable).parent / "pod"
    if script.exists():
        return [str(script), "--help"]
    return [sys.executable, "-m", "cli", "--help"]


def run(quick: bool = False) -> Result:
    """The benchmark; ``quick`` takes two runs of each command."""
    runs = QUICK_RUNS if quick else RUNS
    pod_cmd = _pod_command()
    bare = _time([sys.executable, "-c", "pass"], runs)
    imp = _time([sys.executable, "-c", "import cli.main"], runs)
    helps = _time(pod_cmd, runs)
    on_import = _modules("import cli.main")
    on_help = _modules(
        "import sys\nsys.argv = ['pod', '--help']\nfrom cli.main import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass"
    )
    clean = not any(on_import[m] or on_help[m] for m in MUST_NOT_IMPORT)
    slowest = _importtime()
    heavy_loaded = sorted(m for m in MUST_NOT_IMPORT if on_import[m] or on_help[m])
    table = [
        row("python -c pass", bare["median_ms"], "ms"),
        row("python -c 'import cli.main'", imp["median_ms"], "ms"),
        row("pod --help", helps["median_ms"], "ms"),
        row("pod --help minus bare python", helps["median_ms"] - bare["median_ms"], "ms"),
        row(
            "anthropic/textual not imported",
            0 if clean else len(heavy_loaded),
            "loaded",
            target="0",
            met=clean,
            note=", ".join(heavy_loaded) or None,
        ),
    ]
    if slowest:
        top = slowest[0]
        table.append(row(f"slowest import: {top['module']}", top["cumulative_ms"], "ms"))
    return {
        "benchmark": NAME,
        "quick": quick,
        "params": {"runs": runs, "pod_command": pod_cmd},
        "results": {
            "python_bare": bare,
            "import_cli_main": imp,
            "pod_help": helps,
            "modules_after_import": on_import,
            "modules_after_help": on_help,
            "heavy_free": clean,
            "slowest_imports": slowest,
        },
        "table": table,
    }


def main() -> None:
    """Print the result as JSON."""
    main_for(run, __doc__ or NAME)


if __name__ == "__main__":
    main()
