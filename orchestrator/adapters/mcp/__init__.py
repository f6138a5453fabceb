"""MCP tool servers: the pod as a Model Context Protocol client (docs/mcp.md).

The ``[mcp]`` table is :mod:`orchestrator.config.mcp`; :mod:`.results` the pure mapping of
MCP tools and results to ours; :mod:`.transport` how one connection is opened and watched;
:mod:`.servers` the live servers (start, restart, calls) and the tool adapter; a stdio server
runs under the supervisor of :mod:`orchestrator.adapters.procs`. What servers ask of the pod and tell
it (identity, roots, log messages, progress, input, the model) is :mod:`.client_side`, with
:mod:`.sampling` for lending the model and :mod:`.elicitation` for putting a request for
input to a person (its forms in :mod:`.forms`, the requests waiting for an answer in
:mod:`.elicitations`); :mod:`.resources` reads resources
(``read_mcp_resource``); :mod:`.oauth` signs in to HTTP servers (``pod mcp login``). All are
imported only where servers run: the ``mcp`` SDK is not needed to read a config.
"""

from __future__ import annotations

__all__: list[str] = []
