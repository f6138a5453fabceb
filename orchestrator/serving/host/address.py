"""Where this user's pod host listens, and whether it does: the two questions a cold
``pod run`` asks before it starts a host, answered without the control protocol's models
(docs/performance.md)."""

from __future__ import annotations

from pathlib import Path

from orchestrator.config.paths import runtime_dir
from orchestrator.serving.liveness import socket_is_live

__all__ = ["control_socket", "host_running"]


def control_socket() -> Path:
    """Where the host of this user listens for control requests."""
    return runtime_dir() / "host.sock"


def host_running(path: Path | None = None) -> bool:
    """Whether a host of this user listens now."""
    return socket_is_live(path or control_socket())
