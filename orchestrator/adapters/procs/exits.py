"""How a process ended, in words: the one text for an exit code.

Exit codes follow asyncio's convention: negative is the signal that killed the process.
"""

from __future__ import annotations

import signal

__all__ = ["exit_text"]


def exit_text(code: int | None) -> str:
    """``exit 0``, ``killed by SIGTERM``, ``killed by signal 99``, or ``exit unknown``."""
    if code is None:
        return "exit unknown"
    if code >= 0:
        return f"exit {code}"
    try:
        return f"killed by {signal.Signals(-code).name}"
    except ValueError:
        return f"killed by signal {-code}"
