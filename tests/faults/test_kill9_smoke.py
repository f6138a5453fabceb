"""The kill -9 benchmark in miniature: five turns, SIGKILLs at random points, nothing lost."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_kill9_five_turns() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench.kill9", "--turns", "5", "--seed", "3"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["turns"] == 5
    assert result["kills"] >= 1, result
    assert result["lost"] == 0, result
    assert result["executed_twice"] == 0, result
    assert result["invalid_requests"] == 0, result
    assert result["wrong_status"] == 0, result
    assert result["problems"] == [], result
