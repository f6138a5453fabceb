"""The environment a person's shell gives ``pod``: private runtime and state dirs, no API key."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.serving.server import socket_is_live
from tests.cli.helpers import pod


@pytest.fixture
def env(short_dir: Path, tmp_path: Path) -> Iterator[dict[str, str]]:
    """An environment with private runtime and state dirs and no API key.

    Pods that commands started in the background are shut down afterwards.
    """
    values = dict(os.environ)
    values.pop("ANTHROPIC_API_KEY", None)
    values.pop("ANTHROPIC_BASE_URL", None)
    values["XDG_RUNTIME_DIR"] = str(short_dir)
    values["XDG_STATE_HOME"] = str(tmp_path / "state")
    values["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    yield values
    for info in (short_dir / "pod").glob("*.json"):
        try:
            data = json.loads(info.read_text())
        except (OSError, ValueError):
            continue
        pod(values, "shutdown", "--socket", str(data["socket"]), timeout=20)
        deadline = time.monotonic() + 5
        while info.exists() and time.monotonic() < deadline:
            time.sleep(0.05)  # a pod removes its info file as it exits
        if info.exists():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(data["pid"]), signal.SIGKILL)


@pytest.fixture
def served(env: dict[str, str], workspace: Path, short_dir: Path) -> Iterator[Path]:
    """A pod serving the workspace in the background; yields its socket."""
    socket = short_dir / "pod" / "demo.sock"
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli", "serve", "--workspace", str(workspace), "--name", "demo",
         "--socket", str(socket)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        for _ in range(400):
            if socket_is_live(socket):
                break
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else b""
            subprocess.run(["sleep", "0.05"], check=True)
        yield socket
    finally:
        if proc.poll() is None:
            pod(env, "shutdown", "--socket", str(socket), timeout=20)
            proc.wait(20)
