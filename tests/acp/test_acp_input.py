"""`pod acp` driven by hand: a line that is not JSON is one line on stderr, and it goes on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def test_a_line_that_is_not_json_is_one_line_and_the_agent_keeps_reading(
    tmp_path: Path, short_dir: Path
) -> None:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")},
        "XDG_RUNTIME_DIR": str(short_dir),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
    }
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": 1, "clientCapabilities": {}},
    }
    done = subprocess.run(
        [sys.executable, "-m", "cli", "acp"],
        input=f"hello, agent\n{json.dumps(initialize)}\n",
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    replies = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    assert [r.get("id") for r in replies] == [1]  # it answered the request after the bad line
    assert "result" in replies[0]
    assert "Traceback" not in done.stderr
    [said] = [line for line in done.stderr.splitlines() if "not JSON-RPC" in line]
    assert said.endswith(
        "ignored an input line that is not JSON-RPC: Expecting value: line 1 column 1 (char 0)"
    )
