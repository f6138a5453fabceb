"""How a parent starts and reaches its child pods, as the sub-pods see it.

The sub-pods know what a child must do (run the task, pause, relay approvals); starting a pod
process, loading one into a host and speaking the pod protocol are the serving layer's. That
layer hands a :class:`ChildLauncher` to :class:`~orchestrator.capabilities.subpods.children.Children`
(``orchestrator/serving/pod/assemble.py`` builds it: a supervised ``pod serve`` of its own, or
a pod of the same host when the parent is a host's), and the child drives what it returns.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from orchestrator.errors import PodRuntimeError
from orchestrator.protocol import StatusData

__all__ = [
    "ChildConnection",
    "ChildEvent",
    "ChildLauncher",
    "ChildLinkError",
    "ChildStart",
    "RunningChild",
]


class ChildLinkError(PodRuntimeError):
    """A child pod could not be started or reached, or its connection broke; the message
    says how (the launcher's and the connection's own errors, translated)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ChildStart:
    """Everything a launcher needs to start one child pod."""

    name: str
    """The child's pod name."""
    workspace: Path
    socket: Path
    """Where the child listens once started."""
    log_path: Path
    """Where a child process writes its output (unused by a host, which logs for its pods)."""
    config: dict[str, Any]
    """The child's whole configuration (``PodConfig.portable()``), as the child reads it."""
    timeout_s: float
    """How long the child may take to listen."""


class ChildEvent(Protocol):
    """One event a child sends its parent: its name and its data as sent."""

    @property
    def event(self) -> str:
        """The event's name."""
        ...

    @property
    def data(self) -> dict[str, Any]:
        """The event's data, as the child sent it."""
        ...


class ChildConnection(Protocol):
    """The parent's connection to a started child (a client of the child's socket)."""

    async def status(self) -> StatusData:
        """The child's status (:class:`ChildLinkError` or ``TimeoutError`` when it cannot
        answer)."""
        ...

    async def send(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send the child one method (:class:`ChildLinkError` when the connection broke)."""
        ...

    def events(self) -> AsyncIterator[ChildEvent]:
        """The child's events until its connection closes."""
        ...

    async def close(self) -> None:
        """Close the connection (the child goes on)."""
        ...


class RunningChild(Protocol):
    """A started child pod: what its launcher knows of it besides its socket."""

    @property
    def exit_code(self) -> int | None:
        """How its process ended (negative: the signal that killed it); None while it runs,
        or when it is no process of its own (a pod of a host)."""
        ...

    async def connect(self) -> ChildConnection:
        """A connection to the child (:class:`ChildLinkError` or ``TimeoutError``)."""
        ...

    async def exited(self, timeout_s: float) -> None:
        """Wait, at most ``timeout_s``, until its process ended (at once when it has none)."""
        ...

    async def stop(self, grace_s: float) -> None:
        """After the child was sent ``shutdown``: wait up to ``grace_s`` for it to end, then
        end it; a host's pod is released there. Called again, it does nothing more."""
        ...


class ChildLauncher(Protocol):
    """Starts child pods (:class:`ChildLinkError` with the reason when one cannot start)."""

    async def __call__(self, start: ChildStart) -> RunningChild:
        """Start the child and return once it listens on ``start.socket``."""
        ...
