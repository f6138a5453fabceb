"""Starting a pod's ``task`` children as processes of their own, and speaking to them.

The sub-pods (``orchestrator/capabilities/subpods``) only know the
:class:`~orchestrator.capabilities.subpods.launcher.ChildLauncher` they are given. This is the
one a pod of its own (``pod serve``) gets: each child a ``pod serve`` under a supervisor that
SIGKILLs it when the parent dies. A pod of a host gets the host's launcher instead
(``orchestrator/serving/host/children.py``), which reaches its children the same way,
through :class:`ClientLink`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from orchestrator.adapters.procs import Supervised, Supervision
from orchestrator.capabilities.subpods.child import STOP_GRACE_S
from orchestrator.capabilities.subpods.launcher import (
    ChildConnection,
    ChildEvent,
    ChildLinkError,
    ChildStart,
)
from orchestrator.protocol import StatusData
from orchestrator.serving.client import ClientError, PodClient
from orchestrator.serving.launch import LaunchError, start_serve_process

__all__ = ["ChildProcess", "ChildSupervision", "ClientLink", "launch_child_process"]

ChildSupervision = Supervision(grace_s=STOP_GRACE_S, main_first=True, kill_on_parent_death=True)
"""How a child process is supervised: ended with its parent, however the parent ends."""


class ClientLink:
    """A :class:`PodClient` as a child's connection: its errors become
    :class:`ChildLinkError`."""

    def __init__(self, client: PodClient) -> None:
        self.client = client

    @classmethod
    async def connect(cls, socket: Path) -> ClientLink:
        """Connect to the child listening on ``socket``."""
        try:
            return cls(await PodClient.connect(socket))
        except ClientError as exc:
            raise ChildLinkError(str(exc)) from None

    async def status(self) -> StatusData:
        """The child's status."""
        try:
            return await self.client.status()
        except ClientError as exc:
            raise ChildLinkError(str(exc)) from None

    async def send(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send the child one method."""
        try:
            await self.client.send(method, params)
        except ClientError as exc:
            raise ChildLinkError(str(exc)) from None

    async def events(self) -> AsyncIterator[ChildEvent]:
        """The child's events until the connection closes."""
        async for event in self.client.events():
            yield event

    async def close(self) -> None:
        """Close the connection."""
        await self.client.close()


class ChildProcess:
    """A child started as a supervised ``pod serve`` of its own."""

    def __init__(self, proc: Supervised, socket: Path) -> None:
        self.proc = proc
        self.socket = socket

    @property
    def exit_code(self) -> int | None:
        """How the process ended; None while it runs."""
        return self.proc.code

    async def connect(self) -> ChildConnection:
        """A connection to the child's socket."""
        return await ClientLink.connect(self.socket)

    async def exited(self, timeout_s: float) -> None:
        """Wait (bounded) for the process to end."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.proc.exited(), timeout_s)

    async def stop(self, grace_s: float) -> None:
        """Wait ``grace_s`` for the process to end (it was sent ``shutdown``), then end it."""
        try:
            await asyncio.wait_for(asyncio.shield(self.proc.process.wait()), grace_s)
        except TimeoutError:
            await self.proc.close()


async def launch_child_process(start: ChildStart) -> ChildProcess:
    """Start the child as ``pod serve``, its configuration on its stdin (the
    :class:`~orchestrator.capabilities.subpods.launcher.ChildLauncher` of a pod of its own)."""
    try:
        started = await start_serve_process(
            start.workspace,
            socket=start.socket,
            log_path=start.log_path,
            serve_args=["--child-config-stdin"],
            supervision=ChildSupervision,
            stdin_data=json.dumps(start.config).encode(),
            timeout_s=start.timeout_s,
        )
    except LaunchError as exc:
        raise ChildLinkError(str(exc)) from None
    return ChildProcess(started.proc, start.socket)
