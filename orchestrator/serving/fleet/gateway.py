"""The gateway of one node: today's JSON-lines protocol, forwarded to the host that owns
the pod, so ``pod chat``, ``pod run``, the TUI and the conformance kit work unchanged.

- **Unix sockets**, one per pod of the fleet (``<root>/gw-<node>/<pod>.sock``, 0600 in a 0700
  directory: the local user only, as a pod's own socket), bound for every pod the directory
  lists and kept in step with it. Like the control socket, they refuse a process of another
  user or of another PID namespace (a sandboxed command: :mod:`orchestrator.serving.peer`).
- **TCP** (optional, ``127.0.0.1`` unless told otherwise): the first line is
  ``{"token": "...", "pod": "<name>"}``; a wrong token gets one ``forbidden`` error line and
  the connection is closed. After it, the protocol is the pod's.
- A **control socket** (``<root>/gw-<node>/control.sock``) takes ``load`` (add a pod: its
  whole configuration, as ``pod host`` takes it) and ``list``.

Per client connection the gateway opens a connection on the owning ``PodHost`` and streams
what the pod writes back through a Ray streaming generator. A ``run`` without a
``request_id`` gets one here, so a ``send`` the gateway retries on a new connection (the host
died between two lines) is answered ``duplicate`` if it was committed, never run twice.
When the host is lost mid-stream the client is sent an ``error`` alert saying so, then its
connection is closed: the client reconnects, and the pod comes back from its session (a
running turn paused). A ``run`` the gateway sent again that the pod answers ``duplicate`` was
committed by the first sending: the client gets an ``info`` alert instead of that error.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hmac
import json
import logging
import socket
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import ray
from pydantic import ValidationError

from orchestrator.adapters.session import ensure_private_dir
from orchestrator.config.model import PodConfig
from orchestrator.errors import OrchestratorError
from orchestrator.protocol import MAX_LINE_BYTES, AlertData, ErrorData, encode_event
from orchestrator.serving.fleet.directory import (
    NAMESPACE,
    Directory,
    FleetError,
    Placement,
    pin_for,
)
from orchestrator.serving.fleet.raykv import RayKV
from orchestrator.serving.host.control import HostReply, HostRequest, LoadParams, forbidden_reply
from orchestrator.serving.peer import admit_peer
from orchestrator.serving.server import bind_socket

log = logging.getLogger(__name__)

SYNC_EVERY_S = 1.0
GCS_THREADS = 32
"""Threads for the GCS calls of clients that connect at once: after a node is lost, every
client of its pods reconnects, and the default pool (a few threads) would queue them."""

T = TypeVar("T")


def with_request_id(line: bytes) -> bytes:
    """A client line, with a fresh ``request_id`` if it is a ``run`` without one (anything
    else, a line that is not JSON included, passes unchanged: the pod answers it)."""
    if b'"run"' not in line:
        return line
    try:
        raw = json.loads(line)
    except ValueError:
        return line
    params = raw.get("params") if isinstance(raw, dict) else None
    if raw.get("method") != "run" or not isinstance(params, dict) or "request_id" in params:
        return line
    params["request_id"] = f"gw-{uuid.uuid4()}"
    return json.dumps(raw).encode() + b"\n"


REPLAY_PREFIX = "gw-replay-"
"""The start of the line id the gateway gives a line it sends again on a new connection."""


def tag_replay(line: bytes, replays: dict[str, Any]) -> bytes:
    """A client line to send again after its host was lost, with a line id of the gateway's
    own (the client's id, if any, is kept in ``replays`` to be given back)."""
    try:
        raw = json.loads(line)
    except ValueError:
        return line
    if not isinstance(raw, dict):
        return line
    tag = f"{REPLAY_PREFIX}{uuid.uuid4().hex[:12]}"
    replays[tag] = raw.get("id")
    raw["id"] = tag
    return json.dumps(raw).encode() + b"\n"


def untag_replies(data: bytes, replays: dict[str, Any]) -> bytes:
    """What a pod wrote, with the replies to replayed lines given back their client ids.

    A ``duplicate`` error answering a replayed ``run`` means the first sending committed it
    before its host was lost: for the client that run happened once, so it gets an ``alert``
    saying so instead of an error about a request it sent once.
    """
    if REPLAY_PREFIX.encode() not in data:
        return data
    out: list[bytes] = []
    for line in data.split(b"\n"):
        if REPLAY_PREFIX.encode() not in line:
            out.append(line)
            continue
        raw = json.loads(line)
        reply = raw.get("data") or {}
        tag = reply.get("id")
        if tag not in replays:
            out.append(line)
            continue
        if raw.get("event") == "error" and reply.get("code") == "duplicate":
            replays.pop(tag)
            note = AlertData(
                level="info",
                source="fleet",
                message="the run was committed before its host was lost, and not run again "
                "(get_status says where its turn is: a turn cut off comes back paused)",
                timestamp_ms=int(time.time() * 1000),
            )
            out.append(encode_event("alert", note).rstrip(b"\n"))
            continue
        reply["id"] = replays[tag]
        out.append(json.dumps(raw).encode())
    return b"\n".join(out)


def gateway_dir(root: Path, node: str) -> Path:
    """Where a node's gateway binds its sockets (short: a Unix socket path is ≤107 bytes)."""
    return root / f"gw-{node[:8]}"


class _Route:
    """One client connection's way to its pod: the host actor and the connection on it."""

    def __init__(self, host: Any, link: str) -> None:
        self.host = host
        self.link = link
        self.replays: dict[str, Any] = {}
        """Lines sent again on this connection: the gateway's line id → the client's."""
        self.pending = b""
        """The start of a line the pod is still writing (only kept while ``replays``)."""


class Gateway:
    """One node's gateway (run inside ``GatewayActor``, or in any process joined to Ray)."""

    def __init__(self, node: str, *, tcp_host: str = "127.0.0.1", tcp_port: int = 0) -> None:
        self.directory = Directory(RayKV())
        settings = self.directory.settings()
        self.root = Path(settings.root)
        self.shared = settings.shared_roots()
        self.token = settings.token
        self.dir = gateway_dir(self.root, node)
        self.tcp_host, self.tcp_port = tcp_host, tcp_port
        self._pods: dict[str, asyncio.Server] = {}
        self._control: asyncio.Server | None = None
        self._tcp: asyncio.Server | None = None
        self._sync: asyncio.Task[None] | None = None
        self._syncing = asyncio.Lock()
        self._starting = asyncio.Lock()
        self._gcs_pool = ThreadPoolExecutor(GCS_THREADS, thread_name_prefix="gateway-gcs")
        self._hosts: dict[str, Any] = {}
        """Host actors by name, looked up once: a fleet has a few hosts and each client
        connection needs one, and while a node is lost every lookup waits on a busy GCS. A
        restarted host keeps its handle (the same actor); one removed for good is looked up
        again."""

    async def _gcs(self, call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """A blocking call to Ray's GCS (the KV, ``get_actor``), on the gateway's threads."""
        return await asyncio.get_running_loop().run_in_executor(
            self._gcs_pool, functools.partial(call, *args, **kwargs)
        )

    async def start(self) -> dict[str, Any]:
        """Bind the control socket, every pod's socket and the TCP listener (once: a second
        call, even one made while the first still binds, only reports)."""
        async with self._starting:
            return await self._start()

    async def _start(self) -> dict[str, Any]:
        if self._sync is None:
            # Each step once: a start that failed part-way (the GCS unreachable in ``sync``)
            # is made again, and what it bound stays bound.
            if self._control is None:
                ensure_private_dir(self.dir)
                control = bind_socket(self.dir / "control.sock")
                self._control = await asyncio.start_unix_server(
                    self._serve_control, sock=control, limit=MAX_LINE_BYTES
                )
            if self.tcp_port and self._tcp is None:
                self._tcp = await asyncio.start_server(
                    self._serve_tcp, self.tcp_host, self.tcp_port, limit=MAX_LINE_BYTES
                )
            await self.sync()
            self._sync = asyncio.ensure_future(self._keep_in_sync())
        return {"dir": str(self.dir), "tcp_port": self.tcp_port, "pods": sorted(self._pods)}

    async def stop(self) -> None:
        """Stop listening and remove the sockets."""
        if self._sync is not None:
            self._sync.cancel()
        for server in [self._control, self._tcp, *self._pods.values()]:
            if server is not None:
                server.close()
        self._control = self._tcp = None
        for name in list(self._pods):
            with contextlib.suppress(OSError):
                (self.dir / f"{name}.sock").unlink()
        self._pods.clear()
        with contextlib.suppress(OSError):
            (self.dir / "control.sock").unlink()

    async def sync(self) -> None:
        """Bind a socket for every pod the directory lists, and only those."""
        # One at a time: two ``load``s at once would both find a new pod unbound.
        async with self._syncing:
            await self._sync_now()

    async def _sync_now(self) -> None:
        # Names only: reading every placement (each with its pod's whole config) every second
        # was a thousand GCS reads and parses a second per gateway with a thousand pods, and
        # it starved the very calls clients wait on after a node is lost.
        listed = await self._gcs(self.directory.pods)
        for name in listed - set(self._pods):
            sock = bind_socket(self.dir / f"{name}.sock")

            async def serve(
                reader: asyncio.StreamReader, writer: asyncio.StreamWriter, pod: str = name
            ) -> None:
                await self.serve_pod_client(pod, reader, writer)

            self._pods[name] = await asyncio.start_unix_server(
                serve, sock=sock, limit=MAX_LINE_BYTES
            )
        for name in set(self._pods) - listed:
            self._pods.pop(name).close()
            with contextlib.suppress(OSError):
                (self.dir / f"{name}.sock").unlink()

    async def _keep_in_sync(self) -> None:
        while True:
            await asyncio.sleep(SYNC_EVERY_S)
            try:
                await self.sync()
            except Exception:  # the GCS may be briefly unreachable; try again next time
                log.warning("could not sync the gateway with the directory", exc_info=True)

    # -- forwarding --------------------------------------------------------------------------

    async def _open(self, pod: str) -> _Route:
        """A connection on the pod's owner (placing the pod first if no host owns it)."""
        # Off the loop: each is a blocking round trip to the GCS, and while a node is lost the
        # GCS is slow to answer; on the loop, every other client of this gateway would wait.
        owner = await self._gcs(self.directory.owner, pod)
        cached = self._hosts.get(owner)
        if cached is not None:
            try:
                return _Route(cached, await cached.open.remote(pod))
            except ray.exceptions.ActorDiedError:
                self._hosts.pop(owner, None)  # removed for good: look it up again
        try:
            host = await self._gcs(ray.get_actor, owner, namespace=NAMESPACE)
        except ValueError:
            # The owner was removed for good (not restarting): another host takes the pod.
            owner = await self._gcs(self.directory.owner, pod, exclude=owner)
            host = await self._gcs(ray.get_actor, owner, namespace=NAMESPACE)
        self._hosts[owner] = host
        link = await host.open.remote(pod)
        return _Route(host, link)

    async def serve_pod_client(
        self, pod: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        """A client of ``pod``'s Unix socket: this user's, outside any sandbox
        (:func:`orchestrator.serving.peer.admit_peer`), then forwarded to the pod."""
        if await admit_peer(writer, server=f"the fleet gateway of pod {pod}") is None:
            return
        await self.forward(pod, reader, writer)

    async def forward(
        self, pod: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        """Serve one client of ``pod`` until either side closes."""
        try:
            route = await self._open(pod)
        except Exception as exc:
            await _refuse(writer, "internal", f"pod {pod} is unavailable: {_reason(exc)}")
            return
        pump = asyncio.ensure_future(self._pump(route, writer))
        try:
            while line := await _next_line(reader, pump):
                line = with_request_id(line)
                try:
                    await route.host.send.remote(route.link, line)
                except (ray.exceptions.RayError, FleetError):
                    # The host went between two lines: once more on a new connection. A
                    # replayed run carries its request id, so it cannot commit twice.
                    pump.cancel()
                    route = await self._open(pod)
                    pump = asyncio.ensure_future(self._pump(route, writer))
                    await route.host.send.remote(route.link, tag_replay(line, route.replays))
        except Exception as exc:
            log.info("client of %s: %s", pod, _reason(exc))
        finally:
            pump.cancel()
            with contextlib.suppress(Exception):
                route.host.close.remote(route.link)
            writer.close()

    async def _pump(self, route: _Route, writer: asyncio.StreamWriter) -> None:
        """What the pod writes, to the client, until the pod or its host goes. A host lost
        mid-stream is told to the client (an ``error`` alert) before its connection closes:
        a closed connection alone looks like a pod that shut down."""
        try:
            # Not retried: the hosts' calls are retried on a restarted actor, which for a
            # stream means silence until the node is declared dead; its clients are told at
            # once instead, and reconnect to wait for the host themselves.
            async for ref in route.host.events.options(max_task_retries=0).remote(route.link):
                data = await ref
                if route.replays:
                    # Whole lines only: a chunk may end inside the reply to be rewritten.
                    data, route.pending = _whole_lines(route.pending + data)
                    data = untag_replies(data, route.replays)
                writer.write(data)
                await writer.drain()
        except ray.exceptions.RayError as exc:
            log.info("stream of %s ended: %s", route.link, _reason(exc))
            lost = AlertData(
                level="error",
                source="fleet",
                message=f"the host serving this pod was lost ({_reason(exc)}); connect again: "
                "the pod comes back from its session, a turn it was running paused",
                timestamp_ms=int(time.time() * 1000),
            )
            with contextlib.suppress(ConnectionError):
                writer.write(encode_event("alert", lost))
                await writer.drain()
        except ConnectionError as exc:
            log.info("client of %s left: %s", route.link, _reason(exc))
        writer.close()

    # -- TCP ---------------------------------------------------------------------------------

    async def _serve_tcp(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            hello = json.loads(await asyncio.wait_for(reader.readline(), 10.0))
            token, pod = str(hello.get("token", "")), str(hello.get("pod", ""))
        except (ValueError, AttributeError, TimeoutError, ConnectionError):
            token, pod = "", ""
        if not hmac.compare_digest(token.encode(), self.token.encode()):
            await _refuse(writer, "forbidden", "wrong or missing gateway token")
            return
        await self.forward(pod, reader, writer)

    # -- control -----------------------------------------------------------------------------

    async def _serve_control(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        # A sandboxed command must never add a pod of its own configuration to the fleet.
        if await admit_peer(writer, server="the fleet gateway", refusal=forbidden_reply) is None:
            return
        with contextlib.suppress(ConnectionError):
            while line := await reader.readline():
                reply = await self._control_reply(line)
                writer.write(reply.model_dump_json().encode() + b"\n")
                await writer.drain()
        writer.close()

    async def _control_reply(self, line: bytes) -> HostReply:
        """One control line answered: ``pod host``'s request and reply models, and its
        ``load`` and ``list`` (a pod's other controls go to its host)."""
        request_id = None
        try:
            request = HostRequest.model_validate_json(line)
            request_id = request.id
            if request.method == "list":
                data: Any = [p.model_dump() for p in self.directory.placements()]
            elif request.method == "load":
                data = await self.add(LoadParams.model_validate(request.params).config)
            else:
                raise FleetError(f"a gateway does not {request.method}; use `pod fleet`")
        except (OrchestratorError, ValidationError, OSError) as exc:
            return HostReply(id=request_id, ok=False, error=str(exc))
        return HostReply(id=request_id, ok=True, data=data)

    async def add(self, raw: dict[str, Any]) -> dict[str, Any]:
        """Add a pod to the fleet (its session on the fleet's shared storage unless its
        configuration names one) and bind its socket; its placement as JSON."""
        config = PodConfig.from_portable(raw)
        name = config.pod_name()
        found = self.directory.placement(name)
        if found is None:
            if config.session is None:
                sessions = self.root / "sessions"
                ensure_private_dir(sessions)
                config = config.model_copy(update={"session": sessions / f"{name}.jsonl"})
            found = Placement(
                pod=name,
                config=config.portable(),
                pinned_machine=pin_for(config.workspace, self.shared, socket.gethostname()),
            )
            self.directory.place(found)
        await self.sync()
        return {**found.model_dump(), "socket": str(self.dir / f"{name}.sock")}


async def _next_line(reader: asyncio.StreamReader, pump: asyncio.Future[None]) -> bytes:
    """The client's next line, or ``b""`` once the pod's side ended first."""
    read = asyncio.ensure_future(reader.readline())
    waiting: list[asyncio.Future[Any]] = [read, pump]
    await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
    if read.done():
        return read.result()
    read.cancel()
    return b""


async def _refuse(writer: asyncio.StreamWriter, code: str, message: str) -> None:
    with contextlib.suppress(Exception):
        writer.write(encode_event("error", ErrorData(code=code, message=message)))  # type: ignore[arg-type]
        await writer.drain()
    writer.close()


def _whole_lines(data: bytes) -> tuple[bytes, bytes]:
    """``data`` up to its last newline, and the rest."""
    end = data.rfind(b"\n") + 1
    return data[:end], data[end:]


def _reason(exc: BaseException) -> str:
    cause = getattr(exc, "cause", None)
    return str(cause if isinstance(cause, BaseException) else exc).splitlines()[0][:300]
