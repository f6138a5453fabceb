"""The API key in the environment of ``pod run`` stays out of the model's reach.

``pod run`` starts the pod, so it is the pod's parent and holds the key in its environment. A
command the model runs is the pod's child, running as the same user: it could read
``/proc/<pod's parent>/environ``. Every ``pod`` process is made non-dumpable, so that read is
refused. Root may read any process, so as root the test runs ``pod`` without capabilities
(an empty bounding set): to the kernel's ptrace checks that is an ordinary user.
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from conformance.fake_api import FakeAnthropic, Reply, ToolCall

KEY = "sk-ant-test-parent-key-do-not-leak-0042"
_PR_CAPBSET_DROP = 24


def _without_capabilities() -> None:
    """In the child before exec: drop every capability from the bounding set."""
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in range(64):
        libc.prctl(_PR_CAPBSET_DROP, capability, 0, 0, 0)


def test_a_command_cannot_read_the_key_from_the_cli_that_started_the_pod(
    tmp_path: Path, short_dir: Path
) -> None:
    base = tmp_path
    for name in ("ws", "state", "config", "home"):
        (base / name).mkdir(exist_ok=True)
    (base / "ws" / "README.md").write_text("# demo\n")
    pids: dict[str, int] = {}

    def responder(body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]["content"]
        if any(isinstance(b, dict) and b.get("type") == "tool_result" for b in last):
            return Reply(text="done")
        # Bash's parent is the pod; the pod's parent is `pod run`, which holds the key.
        command = (
            f"for p in $PPID {pids['cli']}; do "
            "tr '\\0' '\\n' < /proc/$p/environ | grep ANTHROPIC_API_KEY || echo \"$p unreadable\"; "
            "done"
        )
        return Reply(tool_calls=[ToolCall("bash", {"command": command})])

    with FakeAnthropic(responder=responder) as fake:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(base / "home"),
            "XDG_RUNTIME_DIR": str(short_dir),
            "XDG_STATE_HOME": str(base / "state"),
            "XDG_CONFIG_HOME": str(base / "config"),
            "PYTHONDONTWRITEBYTECODE": "1",
            "ANTHROPIC_API_KEY": KEY,
            "ANTHROPIC_BASE_URL": fake.base_url,
        }
        cli = subprocess.Popen(
            [sys.executable, "-m", "cli", "run", "--allow-bash", "--shutdown-after", "read it"],
            cwd=base / "ws",
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=_without_capabilities if os.getuid() == 0 else None,
        )
        pids["cli"] = cli.pid
        out, err = cli.communicate(timeout=90)
        assert cli.returncode == 0, err.decode()
        requests = [r.body for r in fake.requests]
    assert len(requests) == 2, requests
    result = json.dumps(requests[1]["messages"][-1]["content"])
    assert KEY not in result
    assert "[redacted]" not in result  # refused by the kernel, not caught by the redaction
    assert result.count("unreadable") == 2, result
    assert KEY not in out.decode() + err.decode()
