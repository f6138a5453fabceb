"""The child launcher of a host's pods: a pod's ``task`` children are pods of the same host.

Each child is loaded over a control connection of its own, ``owned`` by it: when the parent
goes without stopping it (the host dies with it, or the parent is shut down), the host shuts
the child down with the connection. Its socket is reached like a child process's
(:class:`~orchestrator.serving.pod.child_launch.ClientLink`).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

from orchestrator.capabilities.subpods.launcher import ChildConnection, ChildLinkError, ChildStart
from orchestrator.serving.host.client import HostConnection
from orchestrator.serving.host.control import HostError
from orchestrator.serving.pod.child_launch import ClientLink

__all__ = ["HostChild", "HostChildLauncher"]

RELEASE_SLACK_S = 30.0
"""Beyond the child's grace to stop: how long the host may take to answer ``release``."""


class HostChild:
    """A child loaded into the host, owned by :attr:`connection`."""

    def __init__(self, connection: HostConnection, socket: Path) -> None:
        self.connection = connection
        self.socket = socket
        self._released = False

    @property
    def exit_code(self) -> int | None:
        """Always None: the child is no process of its own."""
        return None

    async def connect(self) -> ChildConnection:
        """A connection to the child's socket."""
        return await ClientLink.connect(self.socket)

    async def exited(self, timeout_s: float) -> None:
        """At once: there is no process to wait for."""

    async def stop(self, grace_s: float) -> None:
        """Release the child: the host shuts it down (if the ``shutdown`` sent to it did not
        already) and forgets it; then the owning connection closes."""
        if self._released:
            return
        self._released = True
        with contextlib.suppress(Exception):
            await self.connection.request("release", timeout=grace_s + RELEASE_SLACK_S)
        await self.connection.close()


@dataclass(frozen=True)
class HostChildLauncher:
    """Loads a pod's children into the host listening on :attr:`control`."""

    control: Path

    async def __call__(self, start: ChildStart) -> HostChild:
        """Load the child, owned by a new control connection."""
        params = {"config": start.config, "socket": str(start.socket), "owned": True}
        try:
            connection = await HostConnection.open(self.control)
        except HostError as exc:
            raise ChildLinkError(str(exc)) from None
        try:
            await connection.request("load", params, timeout=start.timeout_s)
        except HostError as exc:
            await connection.close()
            raise ChildLinkError(str(exc)) from None
        return HostChild(connection, start.socket)
