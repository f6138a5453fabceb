"""What the UI needs of its connection to a pod, and the messages its session worker posts.

Everything the pod says becomes one of these messages, so the app draws it in its own queue,
in order with the keys.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Protocol

from textual.message import Message

from orchestrator.protocol import HistoryData, StatusData
from orchestrator.serving.client import PodEvent


class PodLink(Protocol):
    """What the UI needs of a connection; :class:`PodClient` is the real one."""

    async def send(
        self, method: str, params: dict[str, Any] | None = None, *, id: Any = None
    ) -> None:
        """Send a method without waiting."""

    async def status(self, *, timeout: float = 10.0) -> StatusData:
        """``get_status``."""

    async def history(self, *, timeout: float = 10.0) -> HistoryData:
        """``get_history``."""

    async def complete_files(
        self, prefix: str, *, limit: int = 50, timeout: float = 10.0
    ) -> list[str]:
        """``complete_files``."""

    async def request(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float = 10.0
    ) -> PodEvent:
        """Send a method and wait for its direct reply (``rewind`` previews, ``fork``)."""

    def events(self) -> AsyncIterator[PodEvent]:
        """Broadcast events until the connection closes."""

    async def close(self) -> None:
        """Close the connection."""


Connector = Callable[[], Awaitable[PodLink]]


class Attached(Message):
    """The connection is up; status and history were fetched."""

    def __init__(self, status: StatusData, history: HistoryData) -> None:
        super().__init__()
        self.status = status
        self.history = history


class PodEventReceived(Message):
    """One broadcast event from the pod."""

    def __init__(self, event: PodEvent) -> None:
        super().__init__()
        self.event = event


class PodGone(Message):
    """The connection closed (shutdown, crash, or the pod could not be reached)."""

    def __init__(self, error: str = "") -> None:
        super().__init__()
        self.error = error
