"""Where pods keep things on this machine (light: the CLI imports it before anything else)."""

from __future__ import annotations

import os
from pathlib import Path


def state_dir() -> Path:
    """Where pods keep their state (``$XDG_STATE_HOME/pod`` or ``~/.local/state/pod``)."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "pod"


def runtime_dir() -> Path:
    """Where pod sockets live: ``$XDG_RUNTIME_DIR/pod``, else ``/tmp/pod-<uid>``."""
    base = os.environ.get("XDG_RUNTIME_DIR")
    if base and Path(base).is_dir():
        return Path(base) / "pod"
    return Path(f"/tmp/pod-{os.getuid()}")


def default_socket(name: str) -> Path:
    """The default socket path of a pod name."""
    return runtime_dir() / f"{name}.sock"
