"""The kit's MCP case: the rows that interrupt a running tool, with an MCP tool as the slow one.

A pod that takes tools from MCP servers must keep every promise of the transition table while
such a tool runs: pause, cancel, resume and the rest leave a truthful, wire-valid session and
nothing is sent twice. This module gives the rows (every case held in ``executing_tools``),
the slow tool (``hang`` of :mod:`conformance.mcp_server`, named ``mcp__<server>__hang``) and a
config file that declares that server, for a pod that reads ``[mcp.servers]`` from
``$XDG_CONFIG_HOME/pod/config.toml`` as ours does::

    write_mcp_config(tmp / "pod" / "config.toml")
    XDG_CONFIG_HOME=tmp pytest --pod-command '...' --pod-slow-tool '{"name": "mcp__kit__hang"}'

The same server offers ``ask``, the kit's default input tool (``mcp__kit__ask``), which holds
a pod in ``awaiting_input`` for the rows of that state: a pod that declares the server passes
them, one that does not skips them. ``python -m conformance.mcp_case DIR`` writes
``DIR/pod/config.toml``, for ``XDG_CONFIG_HOME=DIR pod conformance -- ...``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from conformance.cases import Case, build_cases
from conformance.process import KIT_MCP_SERVER, KitOptions

SERVER = KIT_MCP_SERVER
SLOW_TOOL: dict[str, Any] = {"name": f"mcp__{SERVER}__hang", "input": {}}
"""The slow tool of the MCP case: an MCP call that runs until it is cancelled."""


def mcp_cases(cases: Sequence[Case] | None = None) -> list[Case]:
    """The runnable cases whose setup holds the pod in a running tool call."""
    return [
        case
        for case in (build_cases() if cases is None else cases)
        if case.setup is not None and case.setup.hold == "slow_tool"
    ]


def mcp_options(options: KitOptions) -> KitOptions:
    """``options`` with the MCP slow tool."""
    return replace(options, slow_tool=dict(SLOW_TOOL))


def write_mcp_config(path: Path, python: str = sys.executable) -> Path:
    """A pod config declaring the kit's MCP server, allowed to run without asking."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # The server runs from the directory this kit was imported from: a pod starts it in its
    # own directory and environment, where ``conformance`` may be another copy of the kit.
    home = Path(__file__).resolve().parents[1]
    path.write_text(
        f"[mcp.servers.{SERVER}]\n"
        f"command = {json.dumps(python)}\n"
        'args = ["-m", "conformance.mcp_server"]\n'
        f"cwd = {json.dumps(str(home))}\n"
        'permission = "allow"\n',
        encoding="utf-8",
    )
    return path


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m conformance.mcp_case XDG_CONFIG_HOME_DIR")
    print(write_mcp_config(Path(sys.argv[1]) / "pod" / "config.toml"))
