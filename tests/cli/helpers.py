"""Running ``pod`` as a person does: a real process, its exit code, stdout and stderr."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def pod(
    env: dict[str, str],
    *args: str,
    timeout: float = 60,
    cwd: str | None = None,
    env_extra: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``pod ARGS`` and capture its output (``env_extra`` added to ``env``)."""
    return subprocess.run(
        [sys.executable, "-m", "cli", *args],
        env={**env, **(env_extra or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
    )


@contextlib.contextmanager
def scripted_pod(
    env: dict[str, str], workspace: Path, replies: list[dict[str, Any]], *serve_args: str
) -> Iterator[Path]:
    """A ``pod serve`` of the workspace answering from ``replies`` (docs/scripted-provider.md);
    yields its socket once it listens, and shuts it down afterwards."""
    script = workspace / "script.json"
    script.write_text(json.dumps({"replies": replies}))
    socket = Path(env["XDG_RUNTIME_DIR"]) / "pod" / "scripted.sock"
    server = subprocess.Popen(
        [sys.executable, "-m", "cli", "serve", "--workspace", str(workspace), "--socket",
         str(socket), "--script", str(script), *serve_args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        read_until(server.stderr, b"listening on")
        yield socket
    finally:
        pod(env, "shutdown", "--socket", str(socket))
        server.wait(60)


def read_until(stream: object, needle: bytes, timeout: float = 60.0) -> bytes:
    """Read a pipe until ``needle`` appears (the process goes on); what was read."""
    seen = b""
    deadline = time.monotonic() + timeout
    fd = stream.fileno()  # type: ignore[attr-defined]
    while needle not in seen:
        assert time.monotonic() < deadline, f"no {needle!r} in {seen!r}"
        chunk = os.read(fd, 4096)
        assert chunk, f"the stream closed before {needle!r}: {seen!r}"
        seen += chunk
    return seen
