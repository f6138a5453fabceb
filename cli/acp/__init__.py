"""``pod acp``: the pod as an Agent Client Protocol agent, for editors such as Zed.

:mod:`.mapping` holds the pure translation between ACP and our protocol; :mod:`.session` a
session's parts (its pod, how pods are launched); :mod:`.agent` the agent, whose sessions are
pods driven over our own socket protocol (docs/acp.md); it puts what a pod asks a person to
the editor through :mod:`.asking`, and runs the slash commands through :mod:`.commands`.
"""

from __future__ import annotations

from cli.acp.agent import PodAgent
from cli.acp.session import (
    AcpOptions,
    AcpSession,
    LaunchedPod,
    PodLauncher,
    PodLaunchError,
)

__all__ = ["AcpOptions", "AcpSession", "LaunchedPod", "PodAgent", "PodLaunchError", "PodLauncher"]
