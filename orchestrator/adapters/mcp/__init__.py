"""MCP tool servers: the pod as a Model Context Protocol client (docs/mcp.md).

The ``[mcp]`` table is :mod:`orchestrator.config.mcp`; :mod:`.results` the pure mapping of
MCP tools and results to ours; :mod:`.transport` how one connection is opened and watched.
The live servers: :mod:`.servers` is the set of a pod's servers (started and stopped
together, their tools offered, each reported) and the tool adapter; :mod:`.server` one
server's calls and restarts, over :mod:`.connection` (its process or session, held open),
with :mod:`.tool_list` following its tool-list changes and :mod:`.failures` saying what went
wrong; a stdio server runs under the supervisor of :mod:`orchestrator.adapters.procs`. What
servers ask of the pod and tell it (identity, roots, log messages, progress, input, the
model) is :mod:`.client_side` (the requests waiting for an answer in :mod:`.elicitations`); :mod:`.asking` routes a server's requests during a call to
:mod:`.sampling` (lending the model) and :mod:`.elicitation` (a request for input put to a
person, its forms in :mod:`.forms`), which ask the pod only through small Protocols
(``SamplingHost``, ``InputHost``), so nothing here imports the runtime. :mod:`.resources`
reads resources (``read_mcp_resource``); :mod:`.oauth` signs in to HTTP servers (``pod mcp
login``). All are imported only where servers run: the ``mcp`` SDK is not
needed to read a config.
"""

from __future__ import annotations

__all__: list[str] = []
