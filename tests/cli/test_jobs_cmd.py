"""``pod jobs`` as a person runs it: list a pod's background jobs, kill one, and one-line
errors for a job or a pod that is not there."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from orchestrator.serving.server import socket_is_live
from tests.cli.helpers import pod
from tests.processes import gone, kill_all, unique_seconds, wait_running


def test_pod_jobs_lists_and_kills(env: dict[str, str], workspace: Path, short_dir: Path) -> None:
    seconds = unique_seconds()
    command = f"echo up; sleep {seconds}"
    script = short_dir / "script.json"
    call = {"name": "bash", "input": {"command": command, "background": True}}
    script.write_text(json.dumps({"replies": [{"tool_calls": [call]}, {"text": "started"}]}))
    socket = short_dir / "pod" / "jobs.sock"
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli", "serve", "--workspace", str(workspace), "--name", "jobs",
         "--socket", str(socket), "--provider", "scripted", "--script", str(script),
         "--allow-bash"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 20
        while not socket_is_live(socket):
            assert time.monotonic() < deadline, "the pod did not start"
            time.sleep(0.05)
        assert pod(env, "jobs", "--workspace", str(workspace)).stdout == "no background jobs\n"
        ran = pod(env, "run", "--socket", str(socket), "start it")
        assert ran.returncode == 0, ran.stderr
        wait_running(f"sleep {seconds}", 1)

        listed = pod(env, "jobs", "--workspace", str(workspace))
        assert listed.returncode == 0
        [line] = listed.stdout.splitlines()
        assert line.startswith("j1 running ") and line.endswith(f" · {command}")
        [job] = json.loads(pod(env, "jobs", "--json", "--socket", str(socket)).stdout)
        assert (job["id"], job["state"], job["command"]) == ("j1", "running", command)

        killed = pod(env, "jobs", "--kill", "j1", "--socket", str(socket))
        assert killed.returncode == 0, killed.stderr
        assert killed.stdout == f"killed j1: {command}\n"
        assert gone(f"sleep {seconds}")

        again = pod(env, "jobs", "--kill", "j1", "--socket", str(socket))
        assert (again.returncode, again.stdout) == (1, "")
        assert again.stderr == "pod: error: job j1 is not running (killed)\n"
        unknown = pod(env, "jobs", "--kill", "j9", "--socket", str(socket))
        assert unknown.returncode == 1
        assert unknown.stderr == "pod: error: no background job 'j9'; jobs: j1 (killed)\n"
    finally:
        pod(env, "shutdown", "--socket", str(socket), timeout=20)
        proc.wait(20)
        kill_all(f"sleep {seconds}")


def test_pod_jobs_without_a_pod(env: dict[str, str], workspace: Path) -> None:
    shown = pod(env, "jobs", "--workspace", str(workspace))
    assert shown.returncode == 1
    assert shown.stderr.startswith("pod: error: no pod is running for ")
    assert len(shown.stderr.splitlines()) == 1
