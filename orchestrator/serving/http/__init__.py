"""The HTTP API with Server-Sent Events over the pod protocol (docs/http.md): FastAPI and
uvicorn, from the optional extra ``.[http]``.

Nothing imports this package unless ``--http`` or ``host.http`` asks for it; the names below
load on first use (PEP 562), so reading :mod:`.address` (parsing ``--http``, finding a running
API's ``_http.json``) does not import FastAPI.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    "AddPod": "context",
    "ApiError": "context",
    "HttpAddress": "address",
    "HttpAddressError": "address",
    "HttpContext": "context",
    "HttpServer": "server",
    "build_app": "app",
    "host_context": "hosting",
    "host_http_info_path": "address",
    "parse_http_address": "address",
    "pod_context": "hosting",
    "pod_http_info_path": "address",
    "read_http_info": "address",
    "start_http": "server",
}

__all__ = [
    "AddPod",
    "ApiError",
    "HttpAddress",
    "HttpAddressError",
    "HttpContext",
    "HttpServer",
    "build_app",
    "host_context",
    "host_http_info_path",
    "parse_http_address",
    "pod_context",
    "pod_http_info_path",
    "read_http_info",
    "start_http",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:
    from orchestrator.serving.http.address import (
        HttpAddress,
        HttpAddressError,
        host_http_info_path,
        parse_http_address,
        pod_http_info_path,
        read_http_info,
    )
    from orchestrator.serving.http.app import build_app
    from orchestrator.serving.http.context import AddPod, ApiError, HttpContext
    from orchestrator.serving.http.hosting import host_context, pod_context
    from orchestrator.serving.http.server import HttpServer, start_http
