"""Starting this user's ``pod host`` in the background, for a run (``pod chat``, ``pod run``)
or for a program (the SDK's ``start_pod``), and waiting until it listens.

The host started so is ``python -m cli.host_start`` (the lighter entry of ``pod host
--exit-when-empty``): it outlives its starter, ignores its Ctrl-C, logs privately to the
runtime dir's ``host.log``, and leaves by itself once it has had no pod for
``host.idle_exit_s``. Moved here from ``cli/pods/start.py`` so a program reaches it without
the CLI; the CLI turns its :class:`HostError` into its one-line error.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

from orchestrator.config.paths import open_private_log, runtime_dir
from orchestrator.serving.host.address import host_running
from orchestrator.serving.host.control import HostError
from orchestrator.serving.start_timeout import START_TIMEOUT_S

__all__ = [
    "HOST_START_TIMEOUT_S",
    "ensure_host",
    "last_line",
    "spawn_host",
    "start_in_background",
    "stop_unless_listening",
]

HOST_START_TIMEOUT_S = START_TIMEOUT_S


def last_line(log_path: Path) -> str:
    """The last line a process that failed at start wrote: its one-line error, without the
    ``pod: error:`` it began with (the message that quotes it begins so already)."""
    try:
        lines = log_path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "no output"
    return lines[-1].removeprefix("pod: error: ") if lines else "no output"


def start_in_background(
    args: list[str], log_path: Path, cwd: Path | None = None
) -> subprocess.Popen[bytes]:
    """Start a process that outlives the caller (and ignores its Ctrl-C), logging privately;
    :class:`~orchestrator.config.paths.UnsafePathError` when the log is not private."""
    log_fd = open_private_log(log_path)
    with os.fdopen(log_fd, "ab") as log:
        return subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            cwd=str(cwd) if cwd is not None else None,
        )


def spawn_host() -> subprocess.Popen[bytes] | None:
    """Start this user's ``pod host`` in the background unless one runs (its process, or
    None); it stops by itself once it has had no pod for ``host.idle_exit_s``."""
    if host_running():
        return None
    log_path = runtime_dir() / "host.log"
    # `pod host --exit-when-empty` by a lighter entry: no Typer, no command table.
    args = [sys.executable, "-m", "cli.host_start", "--log-file", str(log_path)]
    return start_in_background(args, log_path)


def stop_unless_listening(proc: subprocess.Popen[bytes]) -> None:
    """Stop a host started for a pod that was then not loaded, if it does not listen yet:
    nobody else can have loaded a pod into it."""
    if proc.poll() is None and not host_running():
        proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(5)


def ensure_host(starting: subprocess.Popen[bytes] | None = None) -> None:
    """Wait until this user's ``pod host`` listens: the one ``starting`` (a process of
    :func:`spawn_host`), else the one running, else one started now; :class:`HostError`
    with the host's last line when it exits at start or does not listen in time."""
    proc = starting if starting is not None else spawn_host()
    if proc is None:
        return
    log_path = runtime_dir() / "host.log"
    deadline = time.monotonic() + HOST_START_TIMEOUT_S
    while time.monotonic() < deadline:
        if host_running():
            return
        if proc.poll() is not None and not host_running():
            raise HostError(
                f"the pod host exited at start: {last_line(log_path)} (log: {log_path})"
            )
        time.sleep(0.05)
    raise HostError(f"the pod host did not start within {HOST_START_TIMEOUT_S:.0f} s ({log_path})")
