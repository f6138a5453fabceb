"""`pod resume` and `pod run --attach` follow a turn to its end as `pod run` does, and a
`pod run` that finds a turn running says how to follow or pause it."""

from __future__ import annotations

import io
import json
import signal
import sys
from pathlib import Path
from typing import Any

from tests.cli.helpers import pod, read_until, scripted_pod
from tests.cli.test_run_cmd import _start_run

ASK = "Allow? [y]es once, [a]lways this session, [n]o: "


def test_pod_resume_streams_the_resumed_turn_to_its_end(
    env: dict[str, str], workspace: Path
) -> None:
    run = _start_run(env, workspace, "--allow-bash", "run a long command")
    try:
        read_until(run.stderr, b"step 2 of 30")
        assert pod(env, "pause", "--workspace", str(workspace)).returncode == 0
        run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 3
    # Resumed, the model reads the interrupted command's result and answers: that answer is
    # printed, and the exit code is how the turn ended.
    resumed = pod(env, "resume", "--workspace", str(workspace), timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    assert "The tool returned 1 result(s):" in resumed.stdout
    status = json.loads(pod(env, "status", "--workspace", str(workspace), "--json").stdout)
    assert status["status"] == "idle"
    # Nothing to resume now: one line, exit 1.
    again = pod(env, "resume", "--workspace", str(workspace))
    assert again.returncode == 1 and again.stderr.startswith("pod: error: "), again.stderr


def _spawn(env: dict[str, str], *args: str) -> Any:
    import pexpect

    child = pexpect.spawn(
        sys.executable, ["-m", "cli", *args], env=env, encoding="utf-8", timeout=60
    )
    child.logfile_read = io.StringIO()
    return child


def test_a_turn_whose_client_died_is_followed_with_attach(
    env: dict[str, str], workspace: Path
) -> None:
    import pexpect

    replies: list[dict[str, Any]] = [
        {"text": "", "tool_calls": [{"name": "bash", "input": {"command": "echo attached-ok"}}]},
        {"text": "The command printed attached-ok."},
    ]
    with scripted_pod(env, workspace, replies) as socket:
        first = _spawn(env, "run", "go", "--socket", str(socket))
        first.expect_exact(ASK)
        first.kill(signal.SIGKILL)  # the client dies; its turn waits for the approval
        first.close(force=True)

        refused = pod(env, "run", "again", "--socket", str(socket))
        assert refused.returncode == 1
        assert "a turn is already running on this pod" in refused.stderr
        assert "`pod run --attach`" in refused.stderr and "`pod pause`" in refused.stderr

        attached = _spawn(env, "run", "--attach", "--socket", str(socket))
        attached.expect_exact(ASK)  # the approval that waited is asked here
        attached.sendline("y")
        attached.expect(pexpect.EOF)
        attached.close()
        seen = attached.logfile_read.getvalue()
        assert attached.exitstatus == 0, seen
        assert "? bash: run: echo attached-ok" in seen
        assert "attached-ok" in seen and "The command printed attached-ok." in seen

        # Nothing runs now: --attach says so.
        idle = pod(env, "run", "--attach", "--socket", str(socket))
        assert idle.returncode == 1 and "no turn is running" in idle.stderr


def test_attach_to_a_paused_turn_says_how_to_resume_and_exits_3(
    env: dict[str, str], workspace: Path
) -> None:
    replies: list[dict[str, Any]] = [
        {"text": "", "tool_calls": [{"name": "bash", "input": {"command": "echo x"}}]},
    ]
    with scripted_pod(env, workspace, replies) as socket:
        first = _spawn(env, "run", "go", "--socket", str(socket))
        first.expect_exact(ASK)
        first.kill(signal.SIGKILL)
        first.close(force=True)
        assert pod(env, "pause", "--socket", str(socket)).returncode == 0
        attached = pod(env, "run", "--attach", "--socket", str(socket))
    assert attached.returncode == 3, attached.stderr
    assert "`pod resume` continues it" in attached.stderr
