"""The pod's network proxy: how sandboxed commands reach the hosts ``[sandbox] network`` lists.

The sandbox keeps its own empty network namespace; the only way out is this proxy, which runs
in the pod, outside the sandbox, on a Unix socket that each sandbox gets bind-mounted in. The
bridge (:mod:`.bridge`) listens on the sandbox's loopback and hands each connection to it,
introduced by one line naming the command (:data:`GREETING`), so that the pod can tell the
model which of its command's connections were refused.

It is a forward proxy for ``CONNECT host:port`` (HTTPS: a tunnel whose bytes it never reads)
and plain-HTTP ``GET http://host/…`` (one request per connection). The host and port the
client names are checked with :func:`orchestrator.core.hosts.host_allowed`; a refusal is a
403 whose reason and body say that the host is not in ``[sandbox] network``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import py_compile
import shutil
import tempfile
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path

from orchestrator.adapters.sandbox.proxy_request import (
    HEAD_MAX_BYTES,
    BadProxyRequest,
    ProxyRequest,
    parse_request_head,
    response,
)
from orchestrator.core.hosts import HostRule, host_allowed
from orchestrator.errors import SetupError

log = logging.getLogger(__name__)

GREETING = b"POD-BRIDGE "
"""How the bridge begins each connection: ``POD-BRIDGE <tag>\\n``, the tag naming the command
(a tool call's id) whose refusals the pod reports."""

SOCKET_NAME = "proxy.sock"
BRIDGE_NAME = "bridge.pyc"
"""The bridge, compiled into the proxy's folder: the sandbox sees that folder wherever the
pod's own code lies (under ``/tmp``, which the sandbox replaces, say), and a command started
behind it does not wait for the bridge's source to be compiled (a millisecond and a half)."""
BRIDGE = Path(__file__).with_name("bridge.py")
HEAD_TIMEOUT_S = 30.0
"""How long a client may take to say where it goes."""
CONNECT_TIMEOUT_S = 15.0
"""How long reaching the host may take."""
TAGS_KEPT = 256
"""Refusals are kept for this many tags (the oldest go first): nobody asks for a background
job's or an MCP server's."""
REFUSALS_PER_TAG = 20
_CHUNK = 64 * 1024


class ProxyStartError(SetupError):
    """The pod's network proxy cannot listen; the message says where and why."""


class NetworkProxy:
    """One pod's forward proxy on a Unix socket: lets through what ``rules`` allow, refuses
    the rest with a 403 that says why. Start it with :meth:`start`, end it with
    :meth:`close`."""

    def __init__(self, rules: Sequence[HostRule], folder: Path) -> None:
        self.rules = tuple(rules)
        self.folder = folder
        """A private folder of the proxy's own, with its socket and the bridge; a sandbox
        sees it (read-only) at :data:`orchestrator.adapters.sandbox.bwrap.PROXY_INSIDE`."""
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self._refusals: OrderedDict[str, list[str]] = OrderedDict()

    @property
    def socket(self) -> Path:
        """The Unix socket it listens on."""
        return self.folder / SOCKET_NAME

    @classmethod
    async def start(cls, rules: Sequence[HostRule], parent: Path) -> NetworkProxy:
        """A proxy listening in a new private folder under ``parent`` (the pod's runtime
        folder: sockets' paths are limited to about 100 bytes); :class:`ProxyStartError`
        when it cannot."""
        try:
            proxy = cls(rules, Path(tempfile.mkdtemp(prefix="proxy-", dir=parent)))
        except OSError as exc:
            raise ProxyStartError(f"cannot start the sandbox's network proxy: {exc}") from None
        try:
            # Compiled by this interpreter for this interpreter: the sandbox runs it with the
            # pod's own (sys.executable), which runs a .pyc given as its script.
            py_compile.compile(str(BRIDGE), str(proxy.folder / BRIDGE_NAME), doraise=True)
            proxy._server = await asyncio.start_unix_server(
                proxy._serve, proxy.socket, limit=HEAD_MAX_BYTES
            )
        except (OSError, py_compile.PyCompileError) as exc:
            shutil.rmtree(proxy.folder, ignore_errors=True)
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise ProxyStartError(
                f"cannot start the sandbox's network proxy in {proxy.folder}: {why}"
            ) from None
        return proxy

    def refused(self, tag: str) -> list[str]:
        """The ``host:port`` the proxy refused to connections tagged ``tag``, forgotten once
        read."""
        return self._refusals.pop(tag, [])

    async def close(self) -> None:
        """Stop listening, end every connection, remove the socket's folder."""
        if self._server is not None:
            self._server.close()
            for task in list(self._connections):
                task.cancel()
            await asyncio.gather(*self._connections, return_exceptions=True)
            await self._server.wait_closed()
            self._server = None
        shutil.rmtree(self.folder, ignore_errors=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            await self._handle(reader, writer)
        except (ConnectionError, OSError, asyncio.IncompleteReadError, TimeoutError):
            pass  # the client or the host went away: nothing to answer
        finally:
            self._connections.discard(task)
            writer.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(HEAD_TIMEOUT_S):
                tag = await _greeting(reader)
                request = parse_request_head(await reader.readuntil(b"\r\n\r\n"))
        except asyncio.LimitOverrunError:
            writer.write(response(431, "Request Header Fields Too Large"))
            return
        except BadProxyRequest as exc:
            writer.write(response(400, "Bad Request", f"pod sandbox proxy: {exc}\n"))
            return
        if not host_allowed(self.rules, request.host, request.port):
            self._refuse(tag, request)
            writer.write(refusal(request, self.rules))
            return
        try:
            async with asyncio.timeout(CONNECT_TIMEOUT_S):
                host_reader, host_writer = await asyncio.open_connection(request.host, request.port)
        except (OSError, TimeoutError) as exc:
            why = "no answer in time" if isinstance(exc, TimeoutError) else str(exc)
            body = f"pod sandbox proxy: cannot reach {request.authority}: {why}\n"
            writer.write(response(502, "Bad Gateway", body))
            return
        try:
            if request.tunnel:
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                host_writer.write(request.head)
            await _splice(reader, writer, host_reader, host_writer)
        finally:
            host_writer.close()

    def _refuse(self, tag: str, request: ProxyRequest) -> None:
        log.info("sandbox proxy refused %s (%s)", request.authority, tag or "untagged")
        kept = self._refusals.setdefault(tag, [])
        self._refusals.move_to_end(tag)
        if request.authority not in kept and len(kept) < REFUSALS_PER_TAG:
            kept.append(request.authority)
        while len(self._refusals) > TAGS_KEPT:
            self._refusals.popitem(last=False)


def refusal(request: ProxyRequest, rules: Sequence[HostRule]) -> bytes:
    """The 403 for a host not in the list: its reason phrase (which clients such as Python
    quote in their error) and body (which curl prints for plain HTTP) both say why."""
    allowed = ", ".join(str(rule) for rule in rules)
    body = (
        f"blocked by the sandbox: {request.authority} is not in [sandbox] network, so the "
        f"pod's proxy refused it (allowed: {allowed}). Only the user can add a host, in their "
        "own pod config.\n"
    )
    return response(403, f"Forbidden: {request.authority} is not in [sandbox] network", body)


async def _greeting(reader: asyncio.StreamReader) -> str:
    """The tag of the bridge's first line; :class:`BadProxyRequest` for another client."""
    line = await reader.readuntil(b"\n")
    if not line.startswith(GREETING):
        raise BadProxyRequest("connect through the sandbox's bridge (HTTP_PROXY), not this socket")
    return line[len(GREETING) :].decode("utf-8", errors="replace").strip()[:200]


async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    """Copy until ``source`` ends, then end ``sink``'s sending side."""
    while data := await source.read(_CHUNK):
        sink.write(data)
        await sink.drain()
    if sink.can_write_eof():
        with contextlib.suppress(OSError):
            sink.write_eof()


async def _splice(
    client_reader: asyncio.StreamReader,
    client_writer: asyncio.StreamWriter,
    host_reader: asyncio.StreamReader,
    host_writer: asyncio.StreamWriter,
) -> None:
    """Relay both ways until the host's side ends. The client may end its sending side
    first (a half-close) and still read the answer; once the host is done, so is the
    connection."""
    sending = asyncio.create_task(_pipe(client_reader, host_writer))
    try:
        await _pipe(host_reader, client_writer)
    finally:
        sending.cancel()
        with contextlib.suppress(asyncio.CancelledError, ConnectionError, OSError):
            await sending
