"""The environment a person's shell gives ``pod``: private runtime and state dirs, no API key."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

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
