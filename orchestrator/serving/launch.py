"""Starting ``pod serve`` as a supervised child process and waiting for its socket.

Used for the pods other processes own: the pods ``pod acp`` starts for an editor's sessions,
and a pod's sub-pods (``orchestrator/serving/pod/child_launch.py``, the launcher it gives
``orchestrator/capabilities/subpods``). The pod runs under a supervisor
(``orchestrator/adapters/procs``), so it never outlives the process that started it, even by
``kill -9``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from orchestrator.adapters.procs import Supervised, Supervision, spawn
from orchestrator.config.paths import UnsafePathError, open_private_log
from orchestrator.errors import PodRuntimeError
from orchestrator.serving.liveness import socket_is_live
from orchestrator.serving.start_timeout import START_TIMEOUT_S

SERVE_MODULE = ("-m", "cli", "serve")
"""How a pod process is started: this installation's own ``pod serve``."""


class LaunchError(PodRuntimeError):
    """``pod serve`` could not be started; the message says why and where its log is."""


@dataclass(frozen=True)
class ServeProcess:
    """A started ``pod serve``: its socket, its supervised process and its log."""

    socket: Path
    proc: Supervised
    log_path: Path


async def start_serve_process(
    workspace: Path,
    *,
    socket: Path,
    log_path: Path,
    serve_args: list[str],
    supervision: Supervision,
    stdin_data: bytes | None = None,
    timeout_s: float = START_TIMEOUT_S,
) -> ServeProcess:
    """Start ``pod serve`` in ``workspace`` and wait until it listens on ``socket``.

    ``stdin_data`` is written to the pod's stdin, then closed (what must not be on a command
    line: secrets, a whole configuration). Its output goes to a private log, bounded by the
    pod itself (``--log-file``).
    """
    workspace = workspace.resolve()
    args = [*SERVE_MODULE, "--workspace", str(workspace), "--socket", str(socket)]
    args += ["--log-file", str(log_path), *serve_args]
    try:
        log_fd = open_private_log(log_path)
    except UnsafePathError as exc:
        raise LaunchError(str(exc)) from None
    with os.fdopen(log_fd, "ab") as log:
        try:
            proc = await spawn(
                [sys.executable, *args], supervision, stdout=log, stderr=log, cwd=str(workspace),
                stdin=subprocess.DEVNULL if stdin_data is None else subprocess.PIPE,
            )  # fmt: skip
        except OSError as exc:
            raise LaunchError(f"cannot start the pod: {exc}") from None
    try:
        await _until_listening(proc, socket, log_path, stdin_data, timeout_s)
    except BaseException:
        # Cancelled while it started (the caller was paused), or it failed: nobody would
        # own the process otherwise.
        await asyncio.shield(proc.close())
        raise
    return ServeProcess(socket=socket, proc=proc, log_path=log_path)


async def _until_listening(
    proc: Supervised, socket: Path, log_path: Path, stdin_data: bytes | None, timeout_s: float
) -> None:
    stdin = proc.process.stdin
    if stdin is not None and stdin_data is not None:
        with contextlib.suppress(ConnectionError):  # it exited: the wait below says why
            stdin.write(stdin_data)
            await stdin.drain()
        stdin.close()
    deadline = time.monotonic() + timeout_s
    while not socket_is_live(socket):
        if proc.process.returncode is not None:
            raise LaunchError(f"the pod exited at start: {last_line(log_path)} (log: {log_path})")
        if time.monotonic() > deadline:
            raise LaunchError(f"the pod did not start within {timeout_s:.0f} s (log: {log_path})")
        await asyncio.sleep(0.02)


def last_line(path: Path) -> str:
    """The last line of a log (what a pod that failed at start said last)."""
    try:
        lines = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "no output"
    return lines[-1] if lines else "no output"
