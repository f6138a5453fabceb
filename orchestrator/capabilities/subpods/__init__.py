"""Sub-pods: the ``task`` tool delegates to child pods, and the lifecycle holds for the tree.

The ``[subpods]`` and ``[agents]`` tables are :mod:`orchestrator.config.subpods`. The rest is
imported only where a pod serves: :mod:`.spec` derives a child's configuration from its parent's (pure),
:mod:`.report` turns what a child did into the parent's tool result (pure), :mod:`.child` is
one child pod as its parent sees it (process, connection, state), :mod:`.children` the
parent's set of them (limits, cascades, approvals relayed), and :mod:`.task_tool` the tool.
"""

from __future__ import annotations

__all__: list[str] = []
