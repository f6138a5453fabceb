"""The pod's Unix-socket server: JSON lines in, events out, any number of clients.

Each client has a reader (lines → :meth:`Controller.handle`) and a writer task fed by a
queue, so a slow client never stalls the pod or the others; a client whose queue overflows is
disconnected. A bad line (not JSON, not UTF-8, unknown method, wrong types, too long) gets an
``invalid_request`` error to that client only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.errors import SetupError
from orchestrator.protocol import (
    MAX_LINE_BYTES,
    ErrorData,
    ProtocolError,
    encode_event,
    parse_request,
)

log = logging.getLogger(__name__)

CLIENT_QUEUE_LIMIT = 50_000
"""Events buffered for one client before it is considered stuck and dropped."""

_READ_CHUNK = 64 * 1024


class ServerError(SetupError):
    """The socket cannot be created (in use, path too long, permissions)."""


Handler = Callable[[str, object, object, Callable[[bytes], None]], None]


@dataclass(eq=False)
class _Client:
    writer: asyncio.StreamWriter
    queue: asyncio.Queue[bytes | None] = field(default_factory=asyncio.Queue)
    dropped: bool = False

    def send(self, line: bytes) -> None:
        if self.dropped:
            return
        if self.queue.qsize() >= CLIENT_QUEUE_LIMIT:
            self.dropped = True
            self.queue.put_nowait(None)
            return
        self.queue.put_nowait(line)


class PodServer:
    """Serves one controller on a Unix socket."""

    def __init__(self, path: Path, handler: Handler, *, max_line_bytes: int = MAX_LINE_BYTES):
        self.path = path
        self.handler = handler
        self.max_line_bytes = max_line_bytes
        self._clients: set[_Client] = set()
        self._server: asyncio.AbstractServer | None = None

    async def start(self) -> None:
        """Create the socket (0600 in a 0700 directory) and start accepting."""
        prepare_socket_path(self.path)
        old_umask = os.umask(0o177)
        try:
            self._server = await asyncio.start_unix_server(
                self._serve_client, path=str(self.path), limit=_READ_CHUNK
            )
        except OSError as exc:
            raise ServerError(f"cannot listen on {self.path}: {exc.strerror}") from None
        finally:
            os.umask(old_umask)
        os.chmod(self.path, 0o600)

    def broadcast(self, line: bytes) -> None:
        """Queue one encoded event for every client."""
        for client in self._clients:
            client.send(line)

    async def close(self) -> None:
        """Flush what clients have queued, disconnect them and remove the socket."""
        if self._server is not None:
            self._server.close()
        for client in list(self._clients):
            client.queue.put_nowait(None)
        if self._clients:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._all_gone(), timeout=2.0)
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    async def _all_gone(self) -> None:
        while self._clients:
            await asyncio.sleep(0.01)

    async def _serve_client(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        client = _Client(writer)
        self._clients.add(client)
        writer_task = asyncio.create_task(self._write_loop(client))
        try:
            await self._read_loop(reader, client)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self._clients.discard(client)
            client.queue.put_nowait(None)
            await writer_task

    async def _read_loop(self, reader: asyncio.StreamReader, client: _Client) -> None:
        buffer = bytearray()
        discarding = False
        while not client.dropped:
            chunk = await reader.read(_READ_CHUNK)
            if not chunk:
                return
            buffer += chunk
            while True:
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
                    self._dispatch(line, client)

    def _reject(self, client: _Client, message: str, request_id: object = None) -> None:
        error = ErrorData(code="invalid_request", message=message, id=request_id)  # type: ignore[arg-type]
        client.send(encode_event("error", error))

    def _dispatch(self, line: bytes, client: _Client) -> None:
        try:
            request, params = parse_request(line)
        except ProtocolError as exc:
            self._reject(client, str(exc), exc.id)
            return
        except Exception as exc:  # a parser bug must cost one line, not the connection
            log.exception("could not parse a client line")
            self._reject(client, f"unreadable line ({type(exc).__name__})")
            return
        try:
            self.handler(request.method, params, request.id, client.send)
        except Exception as exc:  # one bad method must not take the pod down
            log.exception("handler failed for %s", request.method)
            error = ErrorData(
                code="internal", message=f"{type(exc).__name__}: {exc}", id=request.id
            )
            client.send(encode_event("error", error))

    async def _write_loop(self, client: _Client) -> None:
        writer = client.writer
        try:
            while True:
                line = await client.queue.get()
                if line is None:
                    break
                batch = [line]
                # Drain what is already queued into one write: deltas arrive in bursts.
                while not client.queue.empty() and len(batch) < 512:
                    nxt = client.queue.get_nowait()
                    if nxt is None:
                        writer.write(b"".join(batch))
                        await writer.drain()
                        return
                    batch.append(nxt)
                writer.write(b"".join(batch))
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            with contextlib.suppress(Exception):
                writer.close()
            if client.dropped:
                self._clients.discard(client)


def prepare_socket_path(path: Path) -> None:
    """Make the socket's directory private, refusing a live socket and clearing a stale one."""
    if len(str(path).encode()) > 100:
        raise ServerError(
            f"socket path is too long for a Unix socket ({len(str(path))} bytes): {path}"
        )
    parent = path.parent
    if not parent.exists():
        # Only a directory we create is made private; never chmod someone's existing folder.
        parent.mkdir(parents=True, mode=0o700)
        os.chmod(parent, 0o700)
    if path.exists() or path.is_symlink():
        if socket_is_live(path):
            raise ServerError(f"a pod is already listening on {path}")
        path.unlink()


def socket_is_live(path: Path) -> bool:
    """True when something accepts connections on the socket path."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(0.5)
    try:
        probe.connect(str(path))
    except OSError:
        return False
    finally:
        probe.close()
    return True
