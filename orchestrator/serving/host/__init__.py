"""``pod host``: many pods in one process, each on its own socket, unloaded to its session
file when idle and loaded again when a client connects (docs/host.md)."""

from orchestrator.serving.host.client import HostConnection, ask_host, host_running
from orchestrator.serving.host.control import (
    HostListing,
    HostReply,
    HostRequest,
    HostStats,
    LoadParams,
    PodRow,
)
from orchestrator.serving.host.host import Host, HostError, control_socket, run_host
from orchestrator.serving.host.slot import EvictRefused, PodSlot

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
