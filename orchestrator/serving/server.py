"""The pod's Unix-socket server: JSON lines in, events out, any number of clients.

Each client has a reader (lines → :meth:`Controller.handle`) and a writer task fed by a queue,
so a slow client never stalls the pod or the others. The queues are bounded by bytes, each and
together: everything waiting behind the reply being delivered to one client must fit in
``client_max_queued_bytes``, and what all clients hold together in
``clients_max_queued_bytes``; over either bound a client is disconnected (over the second, the
one holding the most: the slowest) and its bytes are released. A client that asks for the
history again and again without reading, or thirty of them, would otherwise grow the pod by
gigabytes. A dropped client gets a ``queue_full`` error line after what was already on its way,
if it reads within :data:`~orchestrator.serving.served_client.DROP_GRACE_S`; then the connection is cut, whatever it holds. A bad line (not JSON, not
UTF-8, unknown method, wrong types, too long) gets an ``invalid_request`` error to that client
only; a last line without ``\n`` is read when the client closes its side, and every line it
sent before it went away is handled (:mod:`orchestrator.serving.intake`). Peers running as
another user, or in another PID namespace (a sandboxed command), are refused with a
``forbidden`` error line (:mod:`orchestrator.serving.peer`), whatever the socket's mode.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import stat
from collections.abc import Callable
from pathlib import Path

from orchestrator.errors import SetupError
from orchestrator.protocol import (
    MAX_LINE_BYTES,
    ErrorData,
    ProtocolError,
    ResyncData,
    SubscribeParams,
    encode_event,
    parse_request,
)
from orchestrator.serving.intake import REPLY_ONLY, Intake
from orchestrator.serving.liveness import socket_is_live as socket_is_live  # its old home
from orchestrator.serving.peer import Peer, admit_peer
from orchestrator.serving.replay import ReplayBuffer, Resync
from orchestrator.serving.served_client import QueueBudget, ServedClient

log = logging.getLogger(__name__)

CLIENT_MAX_QUEUED_BYTES = 64 * 1024 * 1024
"""Bytes one client may have waiting behind the reply in flight before it is disconnected."""

CLIENTS_MAX_QUEUED_BYTES = 256 * 1024 * 1024
"""Bytes all clients together may hold (queued and in flight); over it, the client holding the
most is disconnected, then the next, until they fit."""

_READ_CHUNK = 64 * 1024


class ServerError(SetupError):
    """The socket cannot be created (in use, path too long, permissions)."""


Handler = Callable[[str, object, object, Callable[[bytes], None]], None]


class PodServer:
    """Serves one controller on a Unix socket."""

    def __init__(
        self,
        path: Path,
        handler: Handler,
        *,
        max_line_bytes: int = MAX_LINE_BYTES,
        client_max_queued_bytes: int = CLIENT_MAX_QUEUED_BYTES,
        clients_max_queued_bytes: int = CLIENTS_MAX_QUEUED_BYTES,
        replay: ReplayBuffer | None = None,
    ):
        self.path = path
        self.handler = handler
        self.max_line_bytes = max_line_bytes
        self.client_max_queued_bytes = client_max_queued_bytes
        self._clients: set[ServedClient] = set()
        self._budget = QueueBudget(limit=clients_max_queued_bytes, clients=self._clients)
        self._server: asyncio.AbstractServer | None = None
        self.replay = replay if replay is not None else ReplayBuffer()
        """Stamps every broadcast line with its id and keeps the last ones (a new epoch each
        time a server is made: each start of the pod, each load by a host)."""
        self._identity: tuple[int, int] | None = None
        """(device, inode) of the socket file we created: only that file is ever removed."""

    @property
    def queued_bytes(self) -> int:
        """Bytes held for all clients: queued plus written but not yet taken by the peer."""
        return sum(client.held_bytes for client in self._clients)

    async def start(self) -> None:
        """Create the socket (0600 in a 0700 directory) and start accepting."""
        sock = bind_socket(self.path)
        try:
            self._server = await asyncio.start_unix_server(
                self._serve_client, sock=sock, limit=_READ_CHUNK
            )
        except OSError as exc:
            sock.close()
            raise ServerError(f"cannot listen on {self.path}: {exc.strerror}") from None
        st_path = os.lstat(self.path)
        self._identity = (st_path.st_dev, st_path.st_ino)

    @property
    def clients(self) -> int:
        """How many clients are connected now."""
        return len(self._clients)

    async def serve_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, peer: Peer | None = None
    ) -> None:
        """Serve a connection someone else accepted (a host, on the socket it keeps bound);
        ``peer``: already admitted by it (:func:`orchestrator.serving.peer.admit_peer`), else checked
        here."""
        await self._serve_client(reader, writer, peer)

    def broadcast(self, line: bytes) -> None:
        """Queue one encoded event for every client, stamped with its id and kept for replay."""
        line = self.replay.stamp(line)
        for client in self._clients:
            client.send(line)

    async def close(self) -> None:
        """Flush what clients have queued, disconnect them and remove the socket."""
        if self._server is not None:
            self._server.close()
        for client in list(self._clients):
            client.close_when_flushed()
        if self._clients:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._all_gone(), timeout=2.0)
        # A client that never reads never flushes: cut it, so that no task of its is left to
        # be cancelled with the loop (logged as a traceback).
        for client in list(self._clients):
            client.writer.transport.abort()
        if self._clients:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._all_gone(), timeout=2.0)
        with contextlib.suppress(OSError):
            st = os.lstat(self.path)
            if (st.st_dev, st.st_ino) == self._identity:
                self.path.unlink()  # still the socket we made, not a file put there since

    async def _all_gone(self) -> None:
        while self._clients:
            await asyncio.sleep(0.01)

    async def _serve_client(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        peer: Peer | None = None,
    ) -> None:
        if peer is None:
            peer = await self._peer_allowed(writer)
            if peer is None:
                return
        client = ServedClient(writer, self.client_max_queued_bytes, self._budget, peer_pid=peer.pid)
        client.fed_from = self.replay.last + 1
        self._clients.add(client)
        intake = await Intake.take(reader, writer)
        writer_task = asyncio.create_task(self._write_loop(client))
        client.reading = asyncio.create_task(self._read_loop(intake, client))
        try:
            await asyncio.wait({client.reading})  # its cancellation (a drop) is not ours
            if not client.reading.cancelled():
                client.reading.result()  # a bug in the loop is raised here, as before
        finally:
            client.stop_reading()
            client.close_when_flushed()
            await writer_task
            intake.close()
            self._clients.discard(client)

    async def _peer_allowed(self, writer: asyncio.StreamWriter) -> Peer | None:
        """The peer if this pod serves it (:func:`orchestrator.serving.peer.admit_peer`: this user, this
        PID namespace, never a sandboxed command); None once refused with a ``forbidden`` line."""
        return await admit_peer(writer, server="this pod")

    async def _read_loop(self, intake: Intake, client: ServedClient) -> None:
        buffer = bytearray()
        discarding = False
        while not client.dropped:
            chunk = await intake.read(_READ_CHUNK)
            if not chunk:
                # The client closed its side: a last line without "\n" is still a line.
                if buffer.strip() and not discarding:
                    self._dispatch(bytes(buffer), client)
                return
            buffer += chunk
            while not client.dropped:
                newline = buffer.find(b"\n")
                if newline < 0:
                    if len(buffer) > self.max_line_bytes:
                        if not discarding:
                            self._reject(client, f"line longer than {self.max_line_bytes} bytes")
                        discarding = True
                        buffer.clear()
                    break
                line = bytes(buffer[:newline])
                del buffer[: newline + 1]
                if discarding:
                    discarding = False  # the end of the oversized line
                    continue
                if len(line) > self.max_line_bytes:
                    self._reject(client, f"line longer than {self.max_line_bytes} bytes")
                    continue
                if line.strip():
                    await client.wait_for_room()
                    if client.dropped:
                        return
                    self._dispatch(line, client)

    def _reject(self, client: ServedClient, message: str, request_id: object = None) -> None:
        error = ErrorData(code="invalid_request", message=message, id=request_id)  # type: ignore[arg-type]
        client.send(encode_event("error", error))

    def _dispatch(self, line: bytes, client: ServedClient) -> None:
        try:
            request, params = parse_request(line)
        except ProtocolError as exc:
            self._reject(client, str(exc), exc.id)
            return
        except Exception as exc:  # a parser bug must cost one line, not the connection
            log.exception("could not parse a client line")
            self._reject(client, f"unreadable line ({type(exc).__name__})")
            return
        if client.unwritable and request.method in REPLY_ONLY:
            return  # its reply could only be built and thrown away
        if isinstance(params, SubscribeParams):
            self._subscribe(client, params.after, request.id)
            return
        try:
            self.handler(request.method, params, request.id, client)
        except Exception as exc:  # one bad method must not take the pod down
            log.exception("handler failed for %s", request.method)
            error = ErrorData(
                code="internal", message=f"{type(exc).__name__}: {exc}", id=request.id
            )
            client.send(encode_event("error", error))

    def _subscribe(self, client: ServedClient, after: str | None, request_id: object) -> None:
        """Queue for ``client`` the events after ``after`` it has not had, in order, ahead of
        the live ones already queued for it; or a ``resync`` when that cannot be done."""
        if after is None:
            return  # nothing to catch up on: the connection is live already
        try:
            result = self.replay.catch_up(client.lines, client.fed_from, after)
        except ValueError as exc:
            self._reject(client, f"invalid subscribe request: after: {exc}", request_id)
            return
        if isinstance(result, Resync):
            data = ResyncData(reason=result.reason, epoch=self.replay.epoch)  # type: ignore[arg-type]
            client.send(encode_event("resync", data))
            return
        lines, client.fed_from = result
        if lines is client.lines:
            return
        size = sum(map(len, lines))
        grown, client.lines, client.queued_bytes = size - client.queued_bytes, lines, size
        client.wake.set()
        # Replayed lines count against the bounds as live ones do: a client that asks for
        # 16 MiB and does not read is dropped as any other.
        client.budget.grew(grown)
        delivering = 0 if client.in_flight or not lines else len(lines[0])
        if not client.dropped and size - delivering > client.max_queued_bytes:
            client.drop(
                f"{size - delivering} bytes queued and unread after replaying what it missed, "
                f"over the bound of {client.max_queued_bytes} bytes for one client; "
                "disconnected. Read the events you ask for."
            )

    async def _write_loop(self, client: ServedClient) -> None:
        writer = client.writer
        try:
            while not client.dropped:
                if client.lines:
                    writer.write(client.next_batch())
                    await writer.drain()
                    client.drained()
                elif client.closing:
                    break
                else:
                    client.wake.clear()
                    await client.wake.wait()
        except (ConnectionError, OSError):
            client.unwritable = True  # it closed its side: its lines are read to their end
        finally:
            # Nothing more reaches this client (it closed, or its socket failed): what is
            # queued for it is released; its requests are read on only if it went away itself.
            if not client.unwritable:
                client.stop_reading()
            client.drained()
            client.closing = True
            client.budget.held -= client.queued_bytes
            client.lines.clear()
            client.queued_bytes = 0
            client.room.set()
            with contextlib.suppress(Exception):
                writer.close()


def bind_socket(path: Path) -> socket.socket:
    """A listening Unix socket at ``path``: 0600, in a private directory, a stale socket of
    ours replaced. The umask is set only around ``bind``, which does not wait: a process that
    serves many pods never has another socket made under the wrong mask meanwhile."""
    prepare_socket_path(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_umask = os.umask(0o177)
    try:
        sock.bind(str(path))
    except OSError as exc:
        sock.close()
        raise ServerError(f"cannot listen on {path}: {exc.strerror}") from None
    finally:
        os.umask(old_umask)
    os.chmod(path, 0o600)
    sock.listen(128)
    sock.setblocking(False)
    return sock


def prepare_socket_path(path: Path) -> None:
    """Make the socket's directory private, refusing a live socket and clearing a stale one.

    Only a stale socket of this user is removed: any other file at the path (a project's file,
    a link, another user's socket) is refused and left alone.
    """
    if len(str(path).encode()) > 100:
        raise ServerError(
            f"socket path is too long for a Unix socket ({len(str(path))} bytes): {path}"
        )
    parent = path.parent
    if not parent.exists():
        # Only a directory we create is made private; never chmod someone's existing folder.
        parent.mkdir(parents=True, mode=0o700)
        os.chmod(parent, 0o700)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(st.st_mode):
        kind = "a symbolic link" if stat.S_ISLNK(st.st_mode) else "not a socket"
        raise ServerError(f"refusing to listen on {path}: a file is there and it is {kind}")
    if st.st_uid != os.getuid():
        raise ServerError(f"refusing to listen on {path}: its socket belongs to uid {st.st_uid}")
    if socket_is_live(path):
        raise ServerError(f"a pod is already listening on {path}")
    path.unlink()
