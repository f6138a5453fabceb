"""What the HTTP app needs of whoever serves pods: a host, or one pod (``pod serve --http``).

The app never reaches into a pod: pods are spoken to as a protocol client over their sockets
(:mod:`.links`); only host-level things (the list, adding a pod, the host's memory) come
through the callables here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from orchestrator.errors import PodRuntimeError
from orchestrator.serving.host.control import HostStats, PodRow

__all__ = ["AddPod", "ApiError", "HttpContext", "allowed_hosts"]


class ApiError(PodRuntimeError):
    """A request the API refuses: an HTTP status, a word for programs and a message that
    says what a person can do (answered as ``{"error": {"code", "message"}}``)."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


PermissionModeName = Literal["default", "accept-edits", "yolo", "read-only", "plan"]


class AddPod(BaseModel):
    """``POST /v1/pods``: what ``pod host``'s command line takes for a pod. The config is the
    one the CLI would load for the workspace; ``model`` and ``permission_mode`` may only
    narrow it."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    workspace: str = Field(min_length=1, max_length=4096)
    """An existing folder (absolute, or relative to the server's own folder)."""
    name: str | None = Field(default=None, min_length=1, max_length=64)
    """The pod's name; default: the workspace folder's."""
    model: str | None = Field(
        default=None, min_length=1, max_length=200, pattern=r"^[A-Za-z0-9][A-Za-z0-9._:@-]*$"
    )
    """A model id as the providers spell them (as ``set_model`` takes it)."""
    permission_mode: PermissionModeName | None = None
    """Never wider than the configuration allows (422 otherwise)."""
    continue_: bool = Field(default=False, alias="continue")
    """Continue the workspace's latest session instead of starting a new one."""


@dataclass(eq=False)
class HttpContext:
    """How the app reaches pods, the same for a host and for one pod."""

    pods: Callable[[], Awaitable[list[PodRow]]]
    host_stats: Callable[[], Awaitable[HostStats | None]]
    socket_for: Callable[[str], Path]
    """The socket of a pod by name; :class:`ApiError` 404 for an unknown one."""
    add_pod: Callable[[AddPod], Awaitable[PodRow]] | None
    """None where pods cannot be added (one pod: 405)."""
    remove_pod: Callable[[str], Awaitable[None]]
    token: str
    allowed_hosts: frozenset[str] = frozenset()
    """``Host`` header values naming the address listened on (:func:`allowed_hosts`)."""
    origin: str = ""
    """The server's own origin (``http://127.0.0.1:PORT``): the only ``Origin`` a
    state-changing request may carry."""
    public: bool = False
    memory: Any = None
    """The host's memory over time (the web page's ``MemorySeries``), where it keeps one."""
    extra: dict[str, Any] = field(default_factory=dict)


def allowed_hosts(host: str, port: int) -> frozenset[str]:
    """The ``Host`` values a browser sends for this address: the address itself, and on the
    loopback every loopback name (``localhost``, ``127.0.0.1``, ``[::1]``)."""
    import ipaddress

    ip = ipaddress.ip_address(host)
    names = {f"[{ip}]" if ip.version == 6 else str(ip)}
    if ip.is_loopback:
        names |= {"localhost", "127.0.0.1", "[::1]"}
    return frozenset(f"{name}:{port}" for name in names)
