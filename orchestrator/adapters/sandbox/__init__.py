"""The sandbox of ``bash`` commands and of MCP servers with ``sandbox = true``: bubblewrap,
read-only root, the workspace writable, and the network off, whole, or a list of hosts.

The ``[sandbox]`` table is :mod:`orchestrator.config.sandbox`; :mod:`.bwrap` builds the command line (pure) and
finds a working ``bwrap``; :mod:`.sandboxing` is a pod's sandbox, ready to wrap programs;
:mod:`.hints` tells the model when a failure looks like the sandbox's doing. Where
``[sandbox] network`` lists hosts, :mod:`orchestrator.core.hosts` decides what a host may reach (pure),
:mod:`.proxy` is the pod's proxy (with :mod:`.proxy_request` reading requests, pure), and
:mod:`.bridge` runs inside each sandbox to reach it. See docs/sandbox.md.
"""

from __future__ import annotations

__all__: list[str] = []
