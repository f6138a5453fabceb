"""The two :class:`~.context.HttpContext` s: a host's pods (``pod host --http``, ``host.http``)
and one pod (``pod serve --http``)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.config.paths import is_pod_name
from orchestrator.config.permissions import mode_refusal
from orchestrator.errors import OrchestratorError
from orchestrator.serving.client import ClientError, PodClient
from orchestrator.serving.host.control import HostStats, PodRow
from orchestrator.serving.http.context import AddPod, ApiError, HttpContext

if TYPE_CHECKING:
    from orchestrator.config.model import PodConfig
    from orchestrator.serving.host import Host

__all__ = ["Configure", "host_context", "pod_context"]

Configure = Callable[[Path, AddPod], "PodConfig"]
"""Builds the config the CLI would load for a workspace (``cli.pods.start.host_config``),
with ``model`` and the name; :class:`ApiError` 422 when it cannot."""


def _unknown(name: str) -> ApiError:
    return ApiError(404, "unknown_pod", f"no pod named {name!r} here (GET /v1/pods lists them)")


def host_context(host: Host, configure: Configure) -> HttpContext:
    """The API on a host's pods; ``configure``: how the CLI builds a workspace's config."""

    async def pods() -> list[PodRow]:
        return host.listing().pods

    async def host_stats() -> HostStats | None:
        return host.listing().host

    def socket_for(name: str) -> Path:
        slot = host.slots.get(name)
        if slot is None:
            raise _unknown(name)
        return slot.socket_path

    async def add_pod(body: AddPod) -> PodRow:
        workspace = Path(body.workspace).expanduser()
        if not workspace.is_absolute() or not workspace.is_dir():
            raise ApiError(
                422,
                "invalid_request",
                f"workspace {body.workspace!r}: not an existing folder (give its absolute path)",
            )
        if body.name is not None and not is_pod_name(body.name):
            raise ApiError(
                422, "invalid_request", f"name {body.name!r}: letters, digits, '.', '_', '-'"
            )
        config = await asyncio.to_thread(configure, workspace.resolve(), body)
        if body.permission_mode is not None:
            why = mode_refusal(body.permission_mode, config.permissions.mode)
            if why is not None:
                raise ApiError(422, "invalid_request", f"permission_mode: {why}")
            permissions = config.permissions.model_copy(update={"mode": body.permission_mode})
            config = config.model_copy(update={"permissions": permissions})
        name = config.pod_name()
        if name in host.slots:
            raise ApiError(409, "already_exists", f"this host already serves a pod named {name}")
        try:
            await host.load(config, None, continue_=body.continue_)
        except (OrchestratorError, OSError) as exc:
            raise ApiError(422, "cannot_start", f"pod {name} cannot start: {exc}") from None
        return next(row for row in host.listing().pods if row.name == name)

    async def remove_pod(name: str) -> None:
        slot = host.slots.get(name)
        if slot is not None:
            await host.shut_down([slot])

    return HttpContext(
        pods=pods,
        host_stats=host_stats,
        socket_for=socket_for,
        add_pod=add_pod,
        remove_pod=remove_pod,
        token="",
    )


def pod_context(name: str, socket: Path) -> HttpContext:
    """The API on one pod (``pod serve --http``): no host, no adding pods."""

    def socket_for(asked: str) -> Path:
        if asked != name:
            raise _unknown(asked)
        return socket

    async def pods() -> list[PodRow]:
        try:
            client = await PodClient.connect(socket)
        except ClientError:
            return []
        try:
            status = await client.status()
        finally:
            await client.close()
        return [
            PodRow(
                name=name,
                workspace=status.workspace,
                socket=str(socket),
                session=status.session or None,
                loaded=True,
                state=status.state,
                clients=0,
                last_active_ms=int(time.time() * 1000),
                cost_usd=status.cost_usd,
            )
        ]

    async def host_stats() -> HostStats | None:
        return None

    async def remove_pod(asked: str) -> None:
        client = await PodClient.connect(socket)
        try:
            await client.send("shutdown")
        finally:
            await client.close()

    return HttpContext(
        pods=pods,
        host_stats=host_stats,
        socket_for=socket_for,
        add_pod=None,
        remove_pod=remove_pod,
        token="",
    )
