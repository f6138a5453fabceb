"""The client's line reader, over a real Unix socket."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from orchestrator.client import BadLine, PodClient, PodEvent, decode_line, read_events


@asynccontextmanager
async def serving(path: Path, payload: bytes) -> AsyncIterator[None]:
    """A socket that sends ``payload`` to each client, then closes the connection."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(payload)
        await writer.drain()
        writer.close()

    server = await asyncio.start_unix_server(handle, str(path))
    try:
        yield
    finally:
        server.close()
        await server.wait_closed()


def test_decode_line_keeps_any_event_name_and_refuses_what_is_not_an_event() -> None:
    assert decode_line(b'{"event": "made_up", "data": {"a": 1}}\n') == PodEvent("made_up", {"a": 1})
    assert decode_line(b'{"event": "status", "data": null}\n') == PodEvent("status", {})
    assert decode_line(b'{"event": "status"}\n') == PodEvent("status", {})
    for line in (b"not json\n", b"[1, 2]\n", b'{"data": {}}\n', b'{"event": 3}\n'):
        assert decode_line(line) == BadLine(line.decode()), line
    assert decode_line(b'{"event": "x", "data": [1]}\n') == BadLine('{"event": "x", "data": [1]}\n')


async def test_read_events_yields_events_and_bad_lines_in_order_until_close(
    short_dir: Path,
) -> None:
    payload = b'{"event": "a"}\ngarbage\n{"event": "b", "data": {"id": 1}}\n'
    path = short_dir / "s"
    async with serving(path, payload):
        reader, writer = await asyncio.open_unix_connection(str(path))
        got = [item async for item in read_events(reader)]
        writer.close()
    assert got == [PodEvent("a"), BadLine("garbage\n"), PodEvent("b", {"id": 1})]


async def test_the_pod_client_treats_a_garbage_line_as_the_end_of_the_connection(
    short_dir: Path,
) -> None:
    path = short_dir / "s"
    async with serving(path, b'{"event": "a"}\ngarbage\n{"event": "b"}\n'):
        client = await PodClient.connect(path)
        assert await client.next_event(5) == PodEvent("a")
        assert await client.next_event(5) is None
        await client.close()
