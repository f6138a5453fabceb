"""Running ``pod`` as a person does: a real process, its exit code, stdout and stderr."""

from __future__ import annotations

import subprocess
import sys


def pod(
    env: dict[str, str], *args: str, timeout: float = 60, cwd: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``pod ARGS`` and capture its output."""
    return subprocess.run(
        [sys.executable, "-m", "cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
    )
