"""How a client reaches a pod, whatever carries the lines: the :class:`Transport` interface.

Two implementations: :class:`~orchestrator.serving.client.PodClient`, a pod's Unix socket
(a pod of a host is one too: the host serves each pod on its own socket), and
:class:`~orchestrator.serving.sdk.http.HttpPodClient`, the HTTP API (docs/http.md). The
SDK's calls (:class:`~orchestrator.serving.pod_calls.PodCalls`) are written once against it.
"""

from __future__ import annotations

from typing import Any, Protocol

from orchestrator.serving.client_events import PodEvent

__all__ = ["REPLYING_METHODS", "Transport"]

REPLYING_METHODS = frozenset(
    {
        "get_status",
        "get_history",
        "complete_files",
        "fork",
        "kill_job",
        "set_mode",
        "list_models",
        "set_model",
        "offer_client_io",
        "list_commands",
        "get_stats",
        "set_budget",
    }
)
"""The methods answered by a reply of their own (docs/protocol.md's Methods table); the others
are answered only when refused (and ``rewind`` with ``dry_run``)."""


class Transport(Protocol):
    """One connection to one pod: methods out, events in, each event once and in order."""

    last_eid: str | None
    """The id of the last broadcast event delivered (what a reconnection catches up from)."""

    async def send(
        self, method: str, params: dict[str, Any] | None = None, *, id: Any = None
    ) -> None:
        """Send a method without waiting for anything."""
        ...

    async def request(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float = 10.0
    ) -> PodEvent:
        """Send a method that has a direct reply and return that reply (an ``error`` event
        when refused)."""
        ...

    async def accepted(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float = 10.0
    ) -> None:
        """Send a method whose only direct reply is an error; return once the pod took it,
        raise its :class:`~orchestrator.serving.client_errors.PodRequestError` when refused."""
        ...

    async def next_event(self, timeout: float | None = None) -> PodEvent | None:
        """The next broadcast event, or None once the connection is gone."""
        ...

    def ready_events(self) -> list[PodEvent]:
        """Broadcast events that already arrived, without waiting."""
        ...

    async def reconnect(self) -> None:
        """Connect again after the connection dropped, catching up from :attr:`last_eid`;
        :class:`~orchestrator.serving.client_errors.ClientError` when the pod is gone."""
        ...

    async def close(self) -> None:
        """Close the connection."""
        ...
