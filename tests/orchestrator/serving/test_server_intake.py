"""Lines a client sent before it went away are handled, even once the pod cannot write to it.

A failed write used to tear the whole connection down, dropping what the client had sent just
before it closed: a ``shutdown`` sent and the connection closed at once, while the pod was
telling the client something, was lost and the pod stayed up. The server below is real (a Unix
socket, the pod's own read and write loops); its handler records what it was asked.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from orchestrator.serving.intake import Intake
from orchestrator.serving.server import PodServer

EVENT = b'{"event": "text_delta", "data": {"text": "unread"}}\n'


class Recorder:
    """The server's handler: the methods it was asked, in order; ``get_status`` answered."""

    def __init__(self) -> None:
        self.methods: list[str] = []
        self.changed = asyncio.Event()

    def __call__(self, method: str, params: object, request_id: object, send: Any) -> None:
        self.methods.append(method)
        self.changed.set()
        if method == "get_status":
            send(json.dumps({"event": "status", "data": {"id": request_id}}).encode() + b"\n")

    async def until(self, method: str) -> None:
        async def seen() -> None:
            while method not in self.methods:
                self.changed.clear()
                await self.changed.wait()

        await asyncio.wait_for(seen(), 30)


async def until(done: Callable[[], bool]) -> None:
    """Until ``done()`` holds (a generous ceiling; nothing is judged by how long it took)."""
    for _ in range(3000):
        if done():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("never happened")


@asynccontextmanager
async def served(short_dir: Path) -> AsyncIterator[tuple[PodServer, Recorder, socket.socket]]:
    """A server, its recorder, and a raw client connected to it and answered once (so the
    server's loops for it run)."""
    recorder = Recorder()
    server = PodServer(short_dir / "s.sock", recorder)
    await server.start()
    peer = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    peer.setblocking(False)
    loop = asyncio.get_running_loop()
    try:
        await loop.sock_connect(peer, str(server.path))
        await loop.sock_sendall(peer, b'{"method": "get_status", "id": "hello"}\n')
        reply = await asyncio.wait_for(loop.sock_recv(peer, 4096), 30)
        assert b'"hello"' in reply
        yield server, recorder, peer
    finally:
        peer.close()
        await asyncio.wait_for(server.close(), 60)


async def test_a_shutdown_sent_and_the_connection_closed_while_the_pod_writes_is_handled(
    short_dir: Path,
) -> None:
    async with served(short_dir) as (server, recorder, peer):
        server.broadcast(EVENT)  # left unread: the client's close resets the connection
        await until(lambda: server.queued_bytes == 0)
        # Sent and closed with no turn of the loop between, then the pod writes again: the
        # write fails before the pod has read the line.
        peer.sendall(b'{"method": "shutdown"}\n')
        peer.close()
        server.broadcast(EVENT)
        await recorder.until("shutdown")
        await until(lambda: server.clients == 0)
    assert recorder.methods == ["get_status", "shutdown"]


async def test_a_client_that_shut_its_reading_side_gets_its_methods_done_but_no_replies_built(
    short_dir: Path,
) -> None:
    async with served(short_dir) as (server, recorder, peer):
        peer.shutdown(socket.SHUT_RD)
        server.broadcast(EVENT)  # fails: it reads nothing more
        await until(lambda: server.queued_bytes == 0)
        peer.sendall(
            b'{"method": "get_history", "id": 1}\n{"method": "get_status", "id": 2}\n'
            b'{"method": "notify", "params": {"message": "hi"}}\n'
        )
        await recorder.until("notify")
        peer.sendall(b'{"method": "shutdown"}')  # its last line, without "\n"
        peer.close()
        await recorder.until("shutdown")
    # Replies nobody can read are not worked out (a flood of get_history would cost the pod
    # for nothing); what changes the pod is done.
    assert recorder.methods == ["get_status", "notify", "shutdown"]


async def test_the_pod_closing_ends_a_connection_that_can_no_longer_be_written(
    short_dir: Path,
) -> None:
    async with served(short_dir) as (server, _, peer):
        peer.shutdown(socket.SHUT_RD)  # and it never closes: still connected, still sending
        server.broadcast(EVENT)
        await until(lambda: server.queued_bytes == 0)
        await asyncio.wait_for(server.close(), 60)
        assert server.clients == 0  # its reading was stopped, not left waiting for ever


async def test_what_the_stream_had_read_before_the_take_over_comes_first_in_order(
    short_dir: Path,
) -> None:
    """A host hands a pod connections it accepted earlier: what their streams had read by then
    (past their own flow-control limit here) comes first, then the socket's, all in order."""
    first, then = b"".join(b"%04d\n" % n for n in range(400)), b"the end\n"
    taken: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
    handed = asyncio.Event()

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await until(lambda: len(getattr(reader, "_buffer", b"")) >= 32)  # over 2 × limit
        intake = await Intake.take(reader, writer)
        handed.set()
        data = b""
        while chunk := await intake.read(7):
            data += chunk
        intake.close()
        writer.close()
        taken.set_result(data)

    listener = await asyncio.start_unix_server(accept, str(short_dir / "h.sock"), limit=16)
    try:
        _, writer = await asyncio.open_unix_connection(str(short_dir / "h.sock"))
        writer.write(first)
        await writer.drain()
        await asyncio.wait_for(handed.wait(), 30)
        writer.write(then)
        writer.close()
        assert await asyncio.wait_for(taken, 30) == first + then
    finally:
        listener.close()
