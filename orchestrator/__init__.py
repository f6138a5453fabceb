"""pod-orchestrator's runtime: protocol, history, wire mapping, controller, turn loop, tools.

The names below are the public surface; they load on first use (PEP 562), so importing one
submodule does not import the rest (the CLI's start-up depends on that).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    "AssistantMessage": "orchestrator.core.history",
    "ClientError": "orchestrator.serving.client_errors",
    "Controller": "orchestrator.runtime.controller",
    "History": "orchestrator.core.history",
    "HttpPodClient": "orchestrator.serving.sdk.http",
    "InterceptorChain": "orchestrator.capabilities.hooks.chain",
    "Item": "orchestrator.core.history",
    "OrchestratorError": "orchestrator.errors",
    "Pod": "orchestrator.serving.pod",
    "PodCalls": "orchestrator.serving.pod_calls",
    "PodClient": "orchestrator.serving.client",
    "PodConfig": "orchestrator.config.model",
    "PodEvent": "orchestrator.serving.client_events",
    "PodRequestError": "orchestrator.serving.client_errors",
    "PodRuntimeError": "orchestrator.errors",
    "ScopedFS": "orchestrator.adapters.scoped_fs",
    "ScriptedProvider": "orchestrator.adapters.providers.scripted",
    "ScriptedReply": "orchestrator.adapters.providers.scripted",
    "SetupError": "orchestrator.errors",
    "SyncPod": "orchestrator.serving.sdk.sync",
    "SystemMessage": "orchestrator.core.history",
    "ToolOutput": "orchestrator.core.tool_output",
    "ToolResult": "orchestrator.core.history",
    "UserMessage": "orchestrator.core.history",
    "WireBuilder": "orchestrator.core.wire",
    "build_pod": "orchestrator.serving.pod",
    "check_wire": "orchestrator.core.validator",
    "connect": "orchestrator.serving.sdk.connect",
    "connect_host": "orchestrator.serving.sdk.connect",
    "connect_http": "orchestrator.serving.sdk.connect",
    "load_config": "orchestrator.config.loading",
    "load_session": "orchestrator.adapters.session",
    "parse_request": "orchestrator.protocol",
    "serve_pod": "orchestrator.serving.pod",
    "start_pod": "orchestrator.serving.sdk.connect",
    "to_wire": "orchestrator.core.wire",
    "validate_wire": "orchestrator.core.validator",
}

__all__ = [
    "AssistantMessage",
    "ClientError",
    "Controller",
    "History",
    "HttpPodClient",
    "InterceptorChain",
    "Item",
    "OrchestratorError",
    "Pod",
    "PodCalls",
    "PodClient",
    "PodConfig",
    "PodEvent",
    "PodRequestError",
    "PodRuntimeError",
    "ScopedFS",
    "ScriptedProvider",
    "ScriptedReply",
    "SetupError",
    "SyncPod",
    "SystemMessage",
    "ToolOutput",
    "ToolResult",
    "UserMessage",
    "WireBuilder",
    "build_pod",
    "check_wire",
    "connect",
    "connect_host",
    "connect_http",
    "load_config",
    "load_session",
    "parse_request",
    "serve_pod",
    "start_pod",
    "to_wire",
    "validate_wire",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'orchestrator' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:
    from orchestrator.adapters.providers.scripted import ScriptedProvider, ScriptedReply
    from orchestrator.adapters.scoped_fs import ScopedFS
    from orchestrator.adapters.session import load_session
    from orchestrator.capabilities.hooks.chain import InterceptorChain
    from orchestrator.config.loading import load_config
    from orchestrator.config.model import PodConfig
    from orchestrator.core.history import (
        AssistantMessage,
        History,
        Item,
        SystemMessage,
        ToolResult,
        UserMessage,
    )
    from orchestrator.core.tool_output import ToolOutput
    from orchestrator.core.validator import check_wire, validate_wire
    from orchestrator.core.wire import WireBuilder, to_wire
    from orchestrator.errors import OrchestratorError, PodRuntimeError, SetupError
    from orchestrator.protocol import parse_request
    from orchestrator.runtime.controller import Controller
    from orchestrator.serving.client import PodClient
    from orchestrator.serving.client_errors import ClientError, PodRequestError
    from orchestrator.serving.client_events import PodEvent
    from orchestrator.serving.pod import Pod, build_pod, serve_pod
    from orchestrator.serving.pod_calls import PodCalls
    from orchestrator.serving.sdk.connect import connect, connect_host, connect_http, start_pod
    from orchestrator.serving.sdk.http import HttpPodClient
    from orchestrator.serving.sdk.sync import SyncPod
