"""Closing a pod process to inspection: /proc environ and memory of the same user."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.skipif(sys.platform != "linux", reason="prctl is Linux-only")
def test_forbid_inspection_makes_the_process_non_dumpable() -> None:
    # In a child process: the flag belongs to the whole process, not to this test run.
    probe = (
        "import ctypes\n"
        "from orchestrator.adapters.inspection import forbid_inspection\n"
        "libc = ctypes.CDLL(None)\n"
        "before = libc.prctl(3, 0, 0, 0, 0)\n"  # PR_GET_DUMPABLE
        "print(before, forbid_inspection(), libc.prctl(3, 0, 0, 0, 0))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=30
    )
    assert done.stdout.split() == ["1", "True", "0"]
