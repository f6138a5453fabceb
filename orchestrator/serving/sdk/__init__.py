"""The Python SDK (docs/sdk.md): a pod driven from a program, over its socket, through this
user's host, or through the HTTP API, with the same calls; and a sync wrapper.

The names below load on first use (PEP 562): a program using the socket never imports httpx.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    "ClientError": "orchestrator.serving.client_errors",
    "HttpPodClient": "orchestrator.serving.sdk.http",
    "PodCalls": "orchestrator.serving.pod_calls",
    "PodClient": "orchestrator.serving.client",
    "PodEvent": "orchestrator.serving.client_events",
    "PodRequestError": "orchestrator.serving.client_errors",
    "SyncPod": "orchestrator.serving.sdk.sync",
    "Transport": "orchestrator.serving.transport",
    "connect": "orchestrator.serving.sdk.connect",
    "connect_host": "orchestrator.serving.sdk.connect",
    "connect_http": "orchestrator.serving.sdk.connect",
    "start_pod": "orchestrator.serving.sdk.connect",
}

__all__ = [
    "ClientError",
    "HttpPodClient",
    "PodCalls",
    "PodClient",
    "PodEvent",
    "PodRequestError",
    "SyncPod",
    "Transport",
    "connect",
    "connect_host",
    "connect_http",
    "start_pod",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:
    from orchestrator.serving.client import PodClient
    from orchestrator.serving.client_errors import ClientError, PodRequestError
    from orchestrator.serving.client_events import PodEvent
    from orchestrator.serving.pod_calls import PodCalls
    from orchestrator.serving.sdk.connect import connect, connect_host, connect_http, start_pod
    from orchestrator.serving.sdk.http import HttpPodClient
    from orchestrator.serving.sdk.sync import SyncPod
    from orchestrator.serving.transport import Transport
