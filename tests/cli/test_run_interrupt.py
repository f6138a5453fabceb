"""Ctrl-C while `pod run` starts its pod: one line, exit 130, and nothing left half-started
(no pod host without pods, no pod process nobody asked for)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli.helpers import pod

CEILING_S = 60.0
"""Generous: a loaded 2-CPU machine starts a pod host in seconds, not a minute."""


def _processes_mentioning(text: str) -> list[str]:
    """Command lines of live processes that name ``text`` (the test's private runtime dir)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue  # it exited meanwhile
        if text in cmdline and str(os.getpid()) != entry.name:
            found.append(cmdline)
    return found


def _wait_until(condition: object, what: str) -> None:
    deadline = time.monotonic() + CEILING_S
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


@pytest.mark.parametrize(
    ("no_host", "appears"),
    [
        (False, "host.log"),  # the run has just started the pod host
        (False, "ws.sock"),  # the host has loaded the pod; the run is about to connect
        (True, "ws.log"),  # the run has just started a `pod serve` process
    ],
)
def test_ctrl_c_while_the_pod_starts_prints_one_line_and_leaves_nothing_running(
    env: dict[str, str], workspace: Path, no_host: bool, appears: str
) -> None:
    env = {k: v for k, v in env.items() if k != "POD_NO_HOST"}
    env |= {"POD_NO_HOST": "1"} if no_host else {}
    runtime = Path(env["XDG_RUNTIME_DIR"]) / "pod"
    run = subprocess.Popen(
        [sys.executable, "-m", "cli", "run", "hello", "--workspace", str(workspace)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        _wait_until(lambda: (runtime / appears).exists() or run.poll() is not None, appears)
        assert run.poll() is None, run.communicate()
        run.send_signal(signal.SIGINT)
        out, err = run.communicate(timeout=CEILING_S)
    finally:
        if run.poll() is None:
            run.kill()
    if appears == "ws.sock" and run.returncode == 3:
        # Between the pod's socket appearing and the run sending its prompt there are only a
        # few milliseconds, and nothing the test can hold the run in: a signal that lands
        # after the prompt went out pauses the turn instead, which is `pod run`'s answer to a
        # Ctrl-C then. Both outcomes are exact; this one leaves the paused pod to shut down.
        said = err.decode().strip().splitlines()
        assert said[0] == "pod: pausing the turn (Ctrl-C again within a second cancels it)"
        assert said[-1] == (
            "pod: the turn is paused; `pod resume` continues it, the next `pod run` replaces it"
        )
        assert pod(env, "shutdown", "--workspace", str(workspace)).returncode == 0
        _wait_until(lambda: not _processes_mentioning(str(runtime)), "a process is left running")
        return
    assert run.returncode == 130, err
    assert err.decode().strip().splitlines() == ["pod: interrupted before the prompt was sent"]
    assert out == b""
    # What the run started is stopped: the host exits once empty, the pod is shut down.
    _wait_until(lambda: not _processes_mentioning(str(runtime)), "a process is left running")
    assert not (runtime / "host.sock").exists() and not (runtime / "ws.sock").exists()
    assert json.loads(pod(env, "ls", "--json").stdout) == []
    # The prompt was never sent: no session holds it.
    shown = pod(env, "sessions", "ls", "--workspace", str(workspace), "--json")
    assert all(row["items"] == 0 for row in json.loads(shown.stdout))


def test_ctrl_c_while_the_command_loads_is_one_line(env: dict[str, str], short_dir: Path) -> None:
    # Before `main` runs, the command imports its modules (a second or so): a Ctrl-C there
    # was a 30-line traceback through the imports. `-X importtime` prints a line as each
    # import ends, so the signal is sent while they are under way; whenever it lands from
    # there on, the outcome is the same, since the command then waits on a socket that never
    # answers.
    silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    path = short_dir / "silent.sock"
    silent.bind(str(path))
    silent.listen(8)
    run = subprocess.Popen(
        [sys.executable, "-X", "importtime", "-m", "cli", "status", "--socket", str(path)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        seen = b""
        while b"cli.commands" not in seen:
            chunk = os.read(run.stderr.fileno(), 65536)  # type: ignore[union-attr]
            assert chunk, seen[-2000:]
            seen += chunk
        run.send_signal(signal.SIGINT)
        _, err = run.communicate(timeout=CEILING_S)
    finally:
        silent.close()
        if run.poll() is None:
            run.kill()
    text = err.decode()
    assert "Traceback" not in text, text
    assert run.returncode == 130, text
    lines = [line for line in text.splitlines() if not line.startswith("import time:")]
    assert [line for line in lines if line.strip()] == ["pod: interrupted"]
