"""``pod acp``: the pod as an Agent Client Protocol agent, for editors such as Zed.

:mod:`.mapping` holds the pure translation between ACP and our protocol; :mod:`.agent` the
agent, whose sessions are pods driven over our own socket protocol (docs/acp.md).
"""

from __future__ import annotations

from orchestrator.acp.agent import (
    AcpOptions,
    AcpSession,
    LaunchedPod,
    PodAgent,
    PodLauncher,
    PodLaunchError,
)

__all__ = ["AcpOptions", "AcpSession", "LaunchedPod", "PodAgent", "PodLaunchError", "PodLauncher"]
