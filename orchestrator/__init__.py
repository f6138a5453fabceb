"""pod-orchestrator's runtime: protocol, history, wire mapping, controller, turn loop, tools.

The names below are the public surface; they load on first use (PEP 562), so importing one
submodule does not import the rest (the CLI's start-up depends on that).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    "AssistantMessage": "orchestrator.history",
    "ClientError": "orchestrator.client",
    "Controller": "orchestrator.controller",
    "History": "orchestrator.history",
    "InterceptorChain": "orchestrator.interceptors",
    "Item": "orchestrator.history",
    "OrchestratorError": "orchestrator.errors",
    "Pod": "orchestrator.pod",
    "PodClient": "orchestrator.client",
    "PodConfig": "orchestrator.config",
    "PodRuntimeError": "orchestrator.errors",
    "ScopedFS": "orchestrator.scoped_fs",
    "ScriptedProvider": "orchestrator.providers.scripted",
    "ScriptedReply": "orchestrator.providers.scripted",
    "SetupError": "orchestrator.errors",
    "SystemMessage": "orchestrator.history",
    "ToolOutput": "orchestrator.tools.base",
    "ToolResult": "orchestrator.history",
    "UserMessage": "orchestrator.history",
    "WireBuilder": "orchestrator.wire",
    "build_pod": "orchestrator.pod",
    "check_wire": "orchestrator.validator",
    "load_config": "orchestrator.config",
    "load_session": "orchestrator.session",
    "parse_request": "orchestrator.protocol",
    "serve_pod": "orchestrator.pod",
    "to_wire": "orchestrator.wire",
    "validate_wire": "orchestrator.validator",
}

__all__ = [
    "AssistantMessage",
    "ClientError",
    "Controller",
    "History",
    "InterceptorChain",
    "Item",
    "OrchestratorError",
    "Pod",
    "PodClient",
    "PodConfig",
    "PodRuntimeError",
    "ScopedFS",
    "ScriptedProvider",
    "ScriptedReply",
    "SetupError",
    "SystemMessage",
    "ToolOutput",
    "ToolResult",
    "UserMessage",
    "WireBuilder",
    "build_pod",
    "check_wire",
    "load_config",
    "load_session",
    "parse_request",
    "serve_pod",
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
    from orchestrator.client import ClientError, PodClient
    from orchestrator.config import PodConfig, load_config
    from orchestrator.controller import Controller
    from orchestrator.errors import OrchestratorError, PodRuntimeError, SetupError
    from orchestrator.history import (
        AssistantMessage,
        History,
        Item,
        SystemMessage,
        ToolResult,
        UserMessage,
    )
    from orchestrator.interceptors import InterceptorChain
    from orchestrator.pod import Pod, build_pod, serve_pod
    from orchestrator.protocol import parse_request
    from orchestrator.providers.scripted import ScriptedProvider, ScriptedReply
    from orchestrator.scoped_fs import ScopedFS
    from orchestrator.session import load_session
    from orchestrator.tools.base import ToolOutput
    from orchestrator.validator import check_wire, validate_wire
    from orchestrator.wire import WireBuilder, to_wire
