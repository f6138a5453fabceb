"""The connection to one MCP server: how it is opened (stdio under a supervisor, or streamable
HTTP with its headers), and a watch on it that tells the pod when the server's side closes."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TextIO, cast

import anyio
import httpx2
from mcp import StdioServerParameters
from mcp.client import Transport
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.message import SessionMessage

from orchestrator.adapters.mcp.wire_watch import WireWatch
from orchestrator.adapters.procs import Supervision
from orchestrator.config.mcp import McpServerConfig

if TYPE_CHECKING:
    from orchestrator.adapters.sandbox.sandboxing import Sandboxing

SERVER_GRACE_S = 1.0
"""Between SIGTERM and SIGKILL for what a server leaves; the SDK kills its supervisor's
process group 2 s after its own SIGTERM, so the supervisor must be done before that."""


def open_transport(
    config: McpServerConfig,
    workspace: Path,
    stderr: IO[str] | None,
    report: Path | None = None,
    sandboxing: Sandboxing | None = None,
    tag: str = "",
    on_refused: Callable[[int], None] | None = None,
    auth: httpx2.Auth | None = None,
) -> Transport:
    """The SDK transport for a server; a stdio server writes its stderr to ``stderr``, and its
    supervisor keeps its record in ``report`` (:func:`orchestrator.adapters.procs.survivors`). With
    ``sandbox = true`` the server runs in ``sandboxing`` (which must be given), named ``tag``
    to its proxy; :class:`~orchestrator.adapters.sandbox.bwrap.SandboxUnavailable` where there is
    none. An HTTP server's requests carry ``auth`` (its OAuth tokens), and its 401 and 403
    answers are passed to ``on_refused`` (the SDK keeps only "an error response")."""
    if config.command is not None:
        cwd = config.cwd or str(workspace)
        command = [config.command, *config.args]
        if config.sandbox:
            if sandboxing is None:
                raise ValueError("a server with sandbox = true needs the pod's sandbox")
            command = sandboxing.argv(command, tag=tag, cwd=Path(cwd).absolute())
        # Under a supervisor, so that the server and all it starts (setsid children too) end
        # with it, and with the pod, even on kill -9.
        supervisor, *args = Supervision(
            grace_s=SERVER_GRACE_S, report=report, json_stdout=True
        ).argv(command)
        params = StdioServerParameters(
            command=supervisor, args=args, env=config.resolved_env() or None, cwd=cwd
        )
        return stdio_client(
            params, errlog=cast(TextIO, stderr) if stderr is not None else sys.stderr
        )
    assert config.url is not None
    http = create_mcp_http_client(headers=config.resolved_headers() or None, auth=auth)
    if on_refused is not None:
        refused = on_refused

        async def seen(response: httpx2.Response) -> None:
            if response.status_code in (401, 403):
                refused(response.status_code)

        http.event_hooks["response"].append(seen)
    return streamable_http_client(config.url, http_client=http)


def describe(exc: BaseException) -> str:
    """An error in words: the SDK's task groups wrap the error that matters; unwrap them."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0][:300]


@contextlib.asynccontextmanager
async def watched(
    transport: Transport, ended: asyncio.Event, watch: WireWatch | None = None
) -> AsyncIterator[Any]:
    """``transport``, with ``ended`` set when the server's side of it closes, and every message
    both ways shown to ``watch``.

    The SDK notices a closed connection only when a request fails; a server that dies between
    calls would go unnoticed until the model next used it. Relaying its messages through one
    more stream (a few microseconds each) tells the pod the moment it happens, and lets the
    watch judge what the server sends (what it says is filtered there, not in the SDK).
    """
    async with transport as (read, write):
        relay_in, relay_out = anyio.create_memory_object_stream[Any](0)
        sends_in, sends_out = anyio.create_memory_object_stream[SessionMessage](0)

        async def relay() -> None:
            async with relay_in:
                with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                    async for message in read:
                        if watch is None or watch.received(message):
                            await relay_in.send(message)
            ended.set()

        async def relay_sends() -> None:
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                # Closing ``write`` when the client closes its end is what tells the server
                # to exit (its stdin closes), as without the relay.
                async with sends_out, write:
                    async for message in sends_out:
                        if watch is not None:
                            watch.sent(message)
                        await write.send(message)

        async with anyio.create_task_group() as group:
            group.start_soon(relay)
            group.start_soon(relay_sends)
            try:
                yield relay_out, sends_in
            finally:
                group.cancel_scope.cancel()


async def first_of(*waits: Any) -> None:
    """Wait until the first of ``waits`` finishes; cancel the rest."""
    tasks = [asyncio.ensure_future(wait) for wait in waits]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
