"""Closing a pod process to inspection by other processes of the same user.

A tool process is the pod's child, running as the same user, so ``cat /proc/$PPID/environ``
would show the environment the pod started with (``ANTHROPIC_API_KEY`` among it), and a
debugger could read its memory. :func:`forbid_inspection` makes the process non-dumpable.

This module imports nothing of the runtime: every ``pod`` command calls it first, ``pod
--help`` included, and must not pay for the tools, the config or the permission parser.
"""

from __future__ import annotations

import sys

__all__ = ["forbid_inspection"]

_PR_SET_DUMPABLE = 4


def forbid_inspection() -> bool:
    """Make this process non-dumpable (Linux); whether that worked.

    Called by every ``pod`` process at start (``cli.main``) and by ``pod serve``, not by the
    library: it is a property of the whole process (no core dumps, no debugger attach without
    root). ``pod run``, ``pod chat`` and ``pod acp`` start pods, so they are a pod's parent and
    hold the same environment.
    """
    if sys.platform != "linux":
        return False
    import ctypes  # here: only Linux uses it

    libc = ctypes.CDLL(None, use_errno=True)
    return bool(libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) == 0)
