"""``pod host``: many pods in one process, each on its own socket, unloaded to its session
file when idle and loaded again when a client connects (docs/host.md).

The names below load on first use (PEP 562): a client of the host (``pod run`` asking
whether one runs, loading a pod into it) needs :mod:`.client` and :mod:`.control` only, not
the host itself, which imports the whole runtime (docs/performance.md).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    "EvictRefused": "slot",
    "Host": "host",
    "HostConnection": "client",
    "HostError": "control",
    "HostListing": "control",
    "HostReply": "control",
    "HostRequest": "control",
    "HostStats": "control",
    "LoadParams": "control",
    "PodRow": "control",
    "PodSlot": "slot",
    "ask_host": "client",
    "control_socket": "address",
    "host_running": "address",
    "run_host": "host",
}

__all__ = [
    "EvictRefused",
    "Host",
    "HostConnection",
    "HostError",
    "HostListing",
    "HostReply",
    "HostRequest",
    "HostStats",
    "LoadParams",
    "PodRow",
    "PodSlot",
    "ask_host",
    "control_socket",
    "host_running",
    "run_host",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # once found, an attribute like any other
    return value


if TYPE_CHECKING:
    from orchestrator.serving.host.address import control_socket, host_running
    from orchestrator.serving.host.client import HostConnection, ask_host
    from orchestrator.serving.host.control import (
        HostError,
        HostListing,
        HostReply,
        HostRequest,
        HostStats,
        LoadParams,
        PodRow,
    )
    from orchestrator.serving.host.host import Host, run_host
    from orchestrator.serving.host.slot import EvictRefused, PodSlot
