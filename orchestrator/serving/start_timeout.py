"""How long a caller waits for a pod it started (light: the CLI imports it on every start)."""

from __future__ import annotations

__all__ = ["START_TIMEOUT_S"]

START_TIMEOUT_S = 60.0
"""How long a starting pod (or pod host) may take to listen before the caller gives up. Generous
on purpose: on a busy machine a Python process's imports alone take many seconds, and giving up
on a pod that is still starting is an error the user did nothing to cause; a pod that exits at
start is reported at once, whatever this says."""
