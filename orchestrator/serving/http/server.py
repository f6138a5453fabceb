"""Serving the API: uvicorn inside the caller's event loop (a host's, or ``pod serve``'s), as a
task; no second process, no thread. It stops with its caller (:meth:`HttpServer.stop`).

At start a fresh token is drawn, the listening socket bound (port 0: any free port, known
before the app is built so the ``Host`` check names it), ``_http.json`` written 0600, and one
line printed to stderr with the URL that logs a browser in. The file is removed at the end.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import socket
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import uvicorn
from fastapi import FastAPI

from orchestrator.serving.http.address import HttpAddress, remove_http_info, write_http_info
from orchestrator.serving.http.app import aclose_app, build_app
from orchestrator.serving.http.context import HttpContext, allowed_hosts
from orchestrator.serving.server import ServerError

__all__ = ["HttpServer", "start_http"]

log = logging.getLogger(__name__)

LIMIT_CONNECTIONS = 512
"""Connections and requests at once before uvicorn answers 503 (up to 256 of them event
streams)."""
MAX_HEADER_BYTES = 64 * 1024


class _InLoopServer(uvicorn.Server):
    """uvicorn's server, leaving the process's signals to the host (or pod) it runs in."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


@dataclass(eq=False)
class HttpServer:
    """A running API: its URL, its token, where it said so, and its task."""

    url: str
    token: str
    info_path: Path
    app: FastAPI
    server: _InLoopServer
    task: asyncio.Task[None]

    async def stop(self) -> None:
        """End the event streams, stop listening, close the pods' connections, remove
        ``_http.json``."""
        await aclose_app(self.app)
        self.server.should_exit = True
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await asyncio.wait_for(asyncio.shield(self.task), 10.0)
        if not self.task.done():
            self.task.cancel()
        remove_http_info(self.info_path, self.token)


def _bind(address: HttpAddress) -> socket.socket:
    family = socket.AF_INET6 if ":" in address.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((address.host, address.port))
    except OSError as exc:
        sock.close()
        raise ServerError(
            f"the HTTP API cannot listen on {address.host}:{address.port}: {exc.strerror}"
        ) from None
    sock.listen(128)
    sock.setblocking(False)
    return sock


async def start_http(
    ctx: HttpContext, address: HttpAddress, info_path: Path, *, announce: bool = True
) -> HttpServer:
    """Serve ``ctx``'s pods on ``address``; ``ctx``'s token, allowed hosts and origin are set
    here. :class:`~orchestrator.serving.server.ServerError` when it cannot listen."""
    sock = _bind(address)
    port = sock.getsockname()[1]
    shown = f"[{address.host}]" if ":" in address.host else address.host
    url = f"http://{shown}:{port}"
    ctx.token = secrets.token_urlsafe(32)
    ctx.allowed_hosts = allowed_hosts(address.host, port)
    ctx.origin = url
    ctx.public = not address.loopback
    app = build_app(ctx)
    config = uvicorn.Config(
        app,
        lifespan="off",
        log_level="warning",
        access_log=False,
        proxy_headers=False,
        server_header=False,
        timeout_keep_alive=5,
        timeout_graceful_shutdown=3,
        limit_concurrency=LIMIT_CONNECTIONS,
        h11_max_incomplete_event_size=MAX_HEADER_BYTES,
    )
    server = _InLoopServer(config)
    task = asyncio.create_task(_serve(server, sock))
    while not server.started:
        if task.done():
            task.result()
            raise ServerError(f"the HTTP API did not start on {url}")
        await asyncio.sleep(0.01)
    write_http_info(info_path, url, ctx.token)
    if announce:
        sys.stderr.write(f"pod: HTTP API at {url}/?token={ctx.token}\n")
        if ctx.public:
            sys.stderr.write(
                "pod: the HTTP API listens beyond this machine over plain HTTP: put TLS in "
                "front of it (a reverse proxy) before using it across a network\n"
            )
        sys.stderr.flush()
    return HttpServer(url, ctx.token, info_path, app, server, task)


async def _serve(server: uvicorn.Server, sock: socket.socket) -> None:
    try:
        await server.serve(sockets=[sock])
    finally:
        sock.close()
