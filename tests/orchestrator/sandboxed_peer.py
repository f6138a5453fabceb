"""A client of a Unix socket run inside ``bwrap --unshare-pid``: a PID namespace of its own,
as every command the sandbox runs has (the root is the host's, so the socket is reachable)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.adapters.sandbox.bwrap import SandboxUnavailable, find_bwrap

__all__ = ["ONE_LINE_CLIENT", "bwrap_pid_ns", "needs_bwrap", "sandboxed_line"]

ONE_LINE_CLIENT = r"""
import socket, sys
sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.settimeout(120)
try:
    sock.connect(sys.argv[1])
except OSError as exc:
    print("connect failed:", exc.strerror)
    sys.exit(0)
if len(sys.argv) > 2:
    try:
        sock.sendall(sys.argv[2].encode() + b"\n")
    except OSError:
        pass  # refused and closed already: its line is still there to read
try:
    line = sock.makefile("rb").readline()
except ConnectionResetError:
    line = b""
sys.stdout.write(line.decode() if line else "closed\n")
"""
"""Connects to argv[1], sends argv[2] as a line if given, prints the first line it gets
(``closed`` at EOF, ``connect failed: …`` when it cannot connect)."""


def needs_bwrap() -> str:
    """The working ``bwrap``, or the test is skipped saying why."""
    try:
        return find_bwrap()
    except SandboxUnavailable as exc:
        pytest.skip(f"no working bubblewrap here: {exc}")


def bwrap_pid_ns(command: list[str]) -> list[str]:
    """``command`` in a PID namespace of its own, seeing the host's files."""
    bwrap = needs_bwrap()
    return [bwrap, "--die-with-parent", "--unshare-pid", "--ro-bind", "/", "/", "--dev", "/dev",
            "--proc", "/proc", "--", *command]  # fmt: skip


async def sandboxed_line(path: Path, line: str | None = None) -> str:
    """What a client in a PID namespace of its own gets first from the socket at ``path``."""
    argv = bwrap_pid_ns([sys.executable, "-c", ONE_LINE_CLIENT, str(path)])
    if line is not None:
        argv.append(line)
    proc = await asyncio.create_subprocess_exec(
        *argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    out, err = await asyncio.wait_for(proc.communicate(), 180)
    assert proc.returncode == 0, err.decode(errors="replace")
    return out.decode()
