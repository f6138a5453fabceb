"""The kit's MCP case: the rows that interrupt a running tool, with an MCP tool as the slow one.

A pod that takes tools from MCP servers must keep every promise of the transition table while
such a tool runs: pause, cancel, resume and the rest leave a truthful, wire-valid session and
nothing is sent twice. This module gives the rows (every case held in ``executing_tools``),
the slow tool (``hang`` of :mod:`conformance.mcp_server`, named ``mcp__<server>__hang``) and a
config file that declares that server, for a pod that reads ``[mcp.servers]`` from
``$XDG_CONFIG_HOME/pod/config.toml`` as ours does::

    write_mcp_config(tmp / "pod" / "config.toml")
    XDG_CONFIG_HOME=tmp pytest --pod-command '...' --pod-slow-tool '{"name": "mcp__kit__hang"}'
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from conformance.cases import Case, build_cases
from conformance.process import KitOptions

SERVER = "kit"
SLOW_TOOL: dict[str, Any] = {"name": f"mcp__{SERVER}__hang", "input": {}}
"""The slow tool of the MCP case: an MCP call that runs until it is cancelled."""


def mcp_cases(cases: Sequence[Case] | None = None) -> list[Case]:
    """The runnable cases whose setup holds the pod in a running tool call."""
    return [
        case
        for case in (build_cases() if cases is None else cases)
        if case.setup is not None and case.setup.hold == "executing_tools"
    ]


def mcp_options(options: KitOptions) -> KitOptions:
    """``options`` with the MCP slow tool."""
    return replace(options, slow_tool=dict(SLOW_TOOL))


def write_mcp_config(path: Path, python: str = sys.executable) -> Path:
    """A pod config declaring the kit's MCP server, allowed to run without asking."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"[mcp.servers.{SERVER}]\n"
        f"command = {json.dumps(python)}\n"
        'args = ["-m", "conformance.mcp_server"]\n'
        'permission = "allow"\n',
        encoding="utf-8",
    )
    return path
