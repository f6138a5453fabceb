"""The protocol client over a real Unix socket: line reading, typed events and replies, and
lines from a newer (or broken) pod. The last test talks to a real pod."""

from __future__ import annotations

import asyncio
import json
import typing
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from orchestrator.core.segments import FileRefSegment, TextSegment
from orchestrator.protocol import (
    EVENT_DATA,
    ErrorData,
    RunEndData,
    StatusData,
    TextData,
    ToolCallArgsDeltaData,
    UserMessageData,
)
from orchestrator.serving.client import (
    BadLine,
    ClientError,
    EventData,
    PodClient,
    PodEvent,
    UnknownEvent,
    decode_line,
    read_events,
)
from tests.e2e.harness import ScriptedReply, running_pod


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


@asynccontextmanager
async def pod_writing(sock_dir: Path, *lines: str) -> AsyncIterator[PodClient]:
    """A client connected to a server that writes ``lines``, then answers requests by id."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for line in lines:
            writer.write(line.encode() + b"\n")
        await writer.drain()
        while request := await reader.readline():
            req = json.loads(request)
            if req["method"] == "get_status":
                data = {"status": "idle", "state": "idle", "id": req["id"]}
                writer.write(json.dumps({"event": "status", "data": data}).encode() + b"\n")
            else:
                data = {"code": "invalid_request", "message": "no", "id": req["id"]}
                writer.write(json.dumps({"event": "error", "data": data}).encode() + b"\n")
            await writer.drain()
        writer.close()

    path = sock_dir / "fake.sock"
    server = await asyncio.start_unix_server(serve, path)
    client = await PodClient.connect(path)
    try:
        yield client
    finally:
        await client.close()
        server.close()


def line(event: str, data: object) -> str:
    return json.dumps({"event": event, "data": data})


def test_the_event_data_union_covers_every_event() -> None:
    typed = set(typing.get_args(EventData)) - {UnknownEvent}
    assert typed == set(EVENT_DATA.values())


async def test_events_arrive_typed_with_the_wire_data_beside(short_dir: Path) -> None:
    segments = [{"kind": "text", "text": "see "}, {"kind": "file_ref", "path": "a.py"}]
    async with pod_writing(
        short_dir,
        line("user_message", {"segments": segments, "seq": 3}),
        line("text_delta", {"text": "Hi"}),
        line("tool_call_args_delta", {"id": "t1", "json": "{}"}),
        line("run_end", {"result": "finished"}),
    ) as client:
        events = [await client.next_event(5) for _ in range(4)]
    assert [e.event for e in events if e] == [
        "user_message",
        "text_delta",
        "tool_call_args_delta",
        "run_end",
    ]
    user, text, args, end = (e.payload for e in events if e)
    assert user == UserMessageData(
        segments=[TextSegment(text="see "), FileRefSegment(path="a.py")], seq=3
    )
    assert text == TextData(text="Hi")
    assert isinstance(args, ToolCallArgsDeltaData) and args.json_ == "{}"
    assert end == RunEndData(result="finished")
    # The wire view is exactly what was sent, unknown keys and all.
    assert events[0] is not None and events[0].data == {"segments": segments, "seq": 3}


async def test_a_newer_pod_does_not_break_the_client(short_dir: Path) -> None:
    async with pod_writing(
        short_dir,
        line("thinking_signature", {"signature": "x"}),  # an event this client never heard of
        line("text_delta", {"text": "a", "lang": "en"}),  # a field added to a known event
        line("usage", {"input_tokens": "many", "output_tokens": 1}),  # data that cannot type
        line("run_end", {"result": "finished"}),
    ) as client:
        events = [await client.next_event(5) for _ in range(4)]
        # The connection is still usable after all of that.
        assert (await client.status()).status == "idle"
    payloads = [e.payload for e in events if e]
    assert isinstance(payloads[0], UnknownEvent) and "unknown event" in payloads[0].problem
    assert payloads[1] == TextData(text="a")
    assert isinstance(payloads[2], UnknownEvent)
    assert "input_tokens" in payloads[2].problem
    assert payloads[3] == RunEndData(result="finished")


async def test_typed_replies_and_refusals(short_dir: Path) -> None:
    async with pod_writing(short_dir) as client:
        status = await client.status()
        assert isinstance(status, StatusData) and status.state == "idle"
        with pytest.raises(ClientError, match="refused: invalid_request: no"):
            await client.history()


def test_expect_names_what_came_instead() -> None:
    event = PodEvent("run_end", {"result": "paused"})
    assert event.expect(RunEndData).result == "paused"
    with pytest.raises(ClientError, match="expected StatusData, the pod sent 'run_end'"):
        event.expect(StatusData)
    error = PodEvent("error", {"code": "not_running", "message": "idle", "id": 1})
    assert isinstance(error.payload, ErrorData)
    with pytest.raises(ClientError, match="refused: not_running: idle"):
        error.expect(StatusData)


async def test_a_real_pod_speaks_only_typed_events(workspace: Path, short_dir: Path) -> None:
    async with running_pod(workspace, short_dir, replies=[ScriptedReply(text="Hello.")]) as pod:
        client = await pod.client()
        try:
            history = await client.history()
            assert history.items == []
            await client.send("run", {"input": "hi @README.md"})
            events: list[PodEvent] = []
            while not events or events[-1].event != "run_end":
                got = await client.next_event(10)
                assert got is not None
                events.append(got)
        finally:
            await client.close()
    assert not [e for e in events if isinstance(e.payload, UnknownEvent)]
    user = next(e.payload for e in events if isinstance(e.payload, UserMessageData))
    assert FileRefSegment(path="README.md") in user.segments
