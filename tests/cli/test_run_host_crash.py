"""A pod host killed mid-turn: `pod run` and `pod status` say the turn is saved and comes back
paused, and `pod resume` starts the pod again and continues it (issue 39, section 2)."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

from tests.cli.helpers import pod, read_until
from tests.cli.test_run_cmd import _start_run

CEILING_S = 60.0


def test_a_host_killed_mid_turn_leaves_a_turn_that_resume_continues(
    env: dict[str, str], workspace: Path
) -> None:
    env = {k: v for k, v in env.items() if k != "POD_NO_HOST"}
    run = _start_run(env, workspace, "--allow-bash", "run a long command")
    try:
        read_until(run.stderr, b"step 2 of 30")
        [row] = json.loads(pod(env, "ls", "--json").stdout)
        assert row["host"]
        os.kill(row["pid"], signal.SIGKILL)  # the host, and the pod in it
        _, err = run.communicate(timeout=CEILING_S)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 1
    said = err.decode().splitlines()[-1]
    assert said.startswith("pod: error: the pod stopped before the run ended"), said
    assert "the turn is saved and comes back paused: `pod resume`" in said

    # Once the killed host's command is gone too, `pod status` names the saved turn.
    deadline = time.monotonic() + CEILING_S
    while True:
        status = pod(env, "status", "--workspace", str(workspace))
        if "did not end" in status.stderr or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert status.returncode == 1
    assert "no pod is running for" in status.stderr
    assert "`pod resume` starts the pod again and continues it" in status.stderr

    resumed = pod(env, "resume", "--workspace", str(workspace), timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    # The crashed command is not run again: the model reads that it was cut off.
    assert "[Interrupted by a pod crash] bash was still running" in resumed.stdout
    assert (
        json.loads(pod(env, "status", "--workspace", str(workspace), "--json").stdout)["status"]
        == "idle"
    )
    pod(env, "shutdown", "--workspace", str(workspace))
