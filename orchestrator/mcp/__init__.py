"""MCP tool servers: the pod as a Model Context Protocol client (docs/mcp.md).

:mod:`.config` is the ``[mcp.servers.<name>]`` table; :mod:`.results` the pure mapping of
MCP tools and results to ours; :mod:`.servers` the live connections and the tool adapter
(imported only where servers run: the ``mcp`` SDK is not needed to read a config).
"""

from __future__ import annotations

from orchestrator.mcp.config import McpConfig, McpServerConfig

__all__ = ["McpConfig", "McpServerConfig"]
