"""The kill -9 benchmark in miniature: five turns, SIGKILLs at random points, nothing lost;
and the same with extended thinking on."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.kill9 import Kill9
from orchestrator.core.history import ToolResult

ROOT = Path(__file__).resolve().parents[2]


def kill9(*args: str) -> dict[str, Any]:
    """Run the benchmark; its JSON line."""
    done = subprocess.run(
        [sys.executable, "-m", "bench.kill9", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_kill9_five_turns() -> None:
    result = kill9("--turns", "5", "--seed", "3")
    assert result["turns"] == 5
    assert result["thinking"] is False and result["thinking_sent_back"] == 0, result
    assert result["requests"] > 0, result
    assert result["kills"] >= 1, result
    assert result["lost"] == 0, result
    # Counted where the (sandboxed) commands can write: every command with a result logged.
    assert result["measured_executions"] is True, result
    assert result["executions"] >= result["bash_results"] > 0, result
    assert result["executed_twice"] == 0, result
    assert result["invalid_requests"] == 0, result
    assert result["wrong_status"] == 0, result
    assert result["problems"] == [], result


def test_kill9_with_thinking_on() -> None:
    result = kill9("--turns", "6", "--seed", "3", "--thinking")
    assert result["thinking"] is True and result["turns"] == 6
    assert result["kills"] >= 1, result
    assert result["lost"] == 0, result
    assert result["executions"] >= result["bash_results"] > 0, result
    assert result["executed_twice"] == 0, result
    assert result["invalid_requests"] == 0, result
    assert result["requests_without_thinking"] == 0, result
    # Counted from the provider's request log: a run with thinking quietly off has none.
    assert result["thinking_sent_back"] > 0, result
    assert result["problems"] == [], result


def test_bash_calls_that_logged_no_execution_fail_the_run(tmp_path: Path) -> None:
    bench = Kill9(tmp_path, 3)
    # The commands' log lies in the workspace, where a sandboxed command can write.
    assert bench.executions.parent == bench.ws
    ran = ToolResult(call_id="toolu_g1_0_0", summary="exit 0", content="step 0")
    bench._count_executions([ran])  # a result, and no log: nothing was measured
    assert bench.uncounted
    assert bench.problems == [
        f"1 bash calls ran but no execution was logged in {bench.executions}: the commands "
        "could not write their log there (a sandbox hiding it?), so 'executed_twice' "
        "measured nothing"
    ]
    logged = Kill9(tmp_path / "again", 3)
    logged.executions.write_text("toolu_g1_0_0\n")
    logged._count_executions([ran])
    assert not logged.uncounted and logged.problems == []
    assert logged.stats["executions"] == logged.stats["bash_results"] == 1
