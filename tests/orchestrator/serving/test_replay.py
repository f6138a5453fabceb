"""Event ids and the replay buffer, over a real Unix socket: ids count up for every client, a
client coming back gets exactly what it missed, bounds by count and bytes, hostile ``after``s."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from orchestrator.protocol import encode_event
from orchestrator.serving.client import PodClient, PodEvent
from orchestrator.serving.replay import ReplayBuffer, Resync, split_eid
from orchestrator.serving.server import PodServer


def _handler(method: str, params: object, request_id: object, send: Any) -> None:
    """Answers ``get_status`` as a pod would: to the asking client only."""
    if method == "get_status":
        send(encode_event("status", {"status": "idle", "state": "idle", "id": request_id}))


@contextlib.asynccontextmanager
async def _server(short_dir: Path, **options: Any) -> AsyncIterator[PodServer]:
    srv = PodServer(short_dir / "r.sock", _handler, **options)
    await srv.start()
    try:
        yield srv
    finally:
        await srv.close()


def _say(srv: PodServer, first: int, last: int) -> None:
    for i in range(first, last + 1):
        srv.broadcast(encode_event("text_delta", {"text": f"t{i}"}))


async def _events(client: PodClient, count: int) -> list[PodEvent]:
    got: list[PodEvent] = []
    for _ in range(count):
        event = await client.next_event(timeout=10)
        assert event is not None, f"connection closed after {[e.eid for e in got]}"
        got.append(event)
    return got


def _numbers(events: list[PodEvent]) -> list[int]:
    return [split_eid(e.eid)[1] for e in events if e.eid is not None]


async def _written(srv: PodServer) -> None:
    """Until everything queued for clients reached their sockets (event-driven: the server's
    own count, with a generous ceiling)."""
    for _ in range(1000):
        if srv.queued_bytes == 0:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{srv.queued_bytes} bytes still queued")


async def test_ids_count_up_without_gaps_for_every_client_and_replies_carry_none(
    short_dir: Path,
) -> None:
    async with _server(short_dir) as srv:
        one, two = await PodClient.connect(srv.path), await PodClient.connect(srv.path)
        await one.status()  # both are served: the server has taken them in
        await two.status()
        _say(srv, 1, 30)
        seen = [await _events(one, 30), await _events(two, 30)]
        for events in seen:
            assert [e.eid for e in events] == [f"{srv.replay.epoch}-{n}" for n in range(1, 31)]
            assert [e.data["text"] for e in events] == [f"t{n}" for n in range(1, 31)]
        reply = await one.request("get_status")
        assert reply.eid is None and reply.data["id"]
        raw = json.loads(srv.replay.lines_from(30)[0])
        assert list(raw) == ["eid", "event", "data"]  # the id beside event and data
        assert one.last_eid == f"{srv.replay.epoch}-30"
        await one.close()
        await two.close()
    async with _server(short_dir) as again:
        assert again.replay.epoch != srv.replay.epoch  # a new start: ids never repeat


async def test_a_client_coming_back_gets_exactly_what_it_missed_then_live(
    short_dir: Path,
) -> None:
    async with _server(short_dir) as srv:
        first = await PodClient.connect(srv.path)
        await first.status()
        _say(srv, 1, 10)
        await _events(first, 10)
        await first.close()
        _say(srv, 11, 30)  # while nobody listens
        back = await PodClient.connect(srv.path, after=first.last_eid)
        await back.status()  # the subscribe was read before it: the replay is queued
        _say(srv, 31, 40)
        events = await _events(back, 30)
        assert _numbers(events) == list(range(11, 41))
        assert [e.data["text"] for e in events] == [f"t{n}" for n in range(11, 41)]
        assert back.ready_events() == []  # nothing twice
        await back.close()


async def test_events_written_before_the_subscribe_was_read_are_put_back_in_order(
    short_dir: Path,
) -> None:
    async with _server(short_dir) as srv:
        _say(srv, 1, 20)
        reader, writer = await asyncio.open_unix_connection(str(srv.path))
        writer.write(b'{"method": "get_status", "id": "joined"}\n')
        assert json.loads(await reader.readline())["data"]["id"] == "joined"
        _say(srv, 21, 25)  # written to this connection before it asks for 11..20
        await _written(srv)
        # On the wire: what was written, then what it lacks from before it joined, each once.
        raw, rw = await asyncio.open_unix_connection(str(srv.path))
        rw.write(b'{"method": "get_status", "id": "joined"}\n')
        assert json.loads(await raw.readline())["data"]["id"] == "joined"
        _say(srv, 26, 27)
        await _written(srv)
        rw.write(
            json.dumps(
                {"method": "subscribe", "params": {"after": f"{srv.replay.epoch}-10"}}
            ).encode()
            + b"\n"
        )
        await rw.drain()
        wire = [json.loads(await raw.readline())["eid"] for _ in range(2 + 15)]
        assert [split_eid(e)[1] for e in wire] == [26, 27, *range(11, 26)]
        rw.close()
        # PodClient puts them back in order for its caller.
        client = PodClient(reader, writer)
        await client.subscribe(f"{srv.replay.epoch}-10")
        _say(srv, 28, 29)
        events = await _events(client, 19)
        assert _numbers(events) == list(range(11, 30))
        await client.close()


async def test_an_id_past_the_buffer_or_of_another_start_gets_resync_then_live_events(
    short_dir: Path,
) -> None:
    async with _server(short_dir, replay=ReplayBuffer(max_events=5)) as srv:
        _say(srv, 1, 20)
        assert (srv.replay.first, srv.replay.last, len(srv.replay)) == (16, 20, 5)
        for after, reason in [
            (f"{srv.replay.epoch}-14", "too_old"),
            ("0ldEpoch99-20", "restarted"),
        ]:
            client = await PodClient.connect(srv.path, after=after)
            resync = await client.next_event(timeout=10)
            assert resync is not None and resync.eid is None
            assert (resync.event, resync.data) == (
                "resync",
                {"reason": reason, "epoch": srv.replay.epoch},
            )
            _say(srv, 21, 21)
            live = await client.next_event(timeout=10)
            assert live is not None and live.eid == f"{srv.replay.epoch}-{srv.replay.last}"
            await client.close()
        # The oldest kept is still replayable: after 15 comes exactly 16..
        client = await PodClient.connect(
            srv.path, after=f"{srv.replay.epoch}-{srv.replay.first - 1}"
        )
        assert _numbers(await _events(client, 5)) == list(
            range(srv.replay.first, srv.replay.last + 1)
        )
        await client.close()


def test_the_buffer_keeps_what_fits_both_bounds() -> None:
    line = encode_event("text_delta", {"text": "x" * 80})
    by_bytes = ReplayBuffer(max_events=1000, max_bytes=1000)
    stamped = [by_bytes.stamp(line) for _ in range(50)]
    size = len(stamped[-1])
    assert by_bytes.held_bytes <= 1000 and len(by_bytes) == 1000 // size
    assert by_bytes.lines_from(by_bytes.first) == stamped[-len(by_bytes) :]
    assert by_bytes.after(f"{by_bytes.epoch}-{by_bytes.first - 2}") == Resync("too_old")
    by_count = ReplayBuffer(max_events=3, max_bytes=10**9)
    for _ in range(10):
        by_count.stamp(line)
    assert (len(by_count), by_count.first) == (3, 8)
    # A line longer than the byte bound is kept alone, until the next one.
    tiny = ReplayBuffer(max_bytes=10)
    big = tiny.stamp(line)
    assert tiny.lines_from(1) == [big]
    tiny.stamp(line)
    assert len(tiny) == 1 and tiny.first == 2


@pytest.mark.parametrize(
    "after",
    [
        "garbage",
        "abc--5",  # a negative n
        "abc-" + "9" * 40,  # a huge n
        "abc-01",
        "a b-1",
        "x" * 70 + "-1",
        "",
        12,
        ["abc-1"],
        {"eid": "abc-1"},
    ],
)
async def test_a_hostile_after_gets_a_clear_invalid_request(short_dir: Path, after: object) -> None:
    async with _server(short_dir) as srv:
        _say(srv, 1, 3)
        client = await PodClient.connect(srv.path)
        await client.send("subscribe", {"after": after}, id="s1")
        error = await client.next_event(timeout=10)
        assert error is not None and (error.event, error.data["code"]) == (
            "error",
            "invalid_request",
        )
        assert error.data["id"] == "s1" and "subscribe" in error.data["message"]
        assert (await client.status()).status == "idle"  # the connection goes on
        await client.close()


async def test_an_id_not_sent_yet_is_refused(short_dir: Path) -> None:
    async with _server(short_dir) as srv:
        _say(srv, 1, 3)
        client = await PodClient.connect(srv.path)
        await client.send("subscribe", {"after": f"{srv.replay.epoch}-4"}, id="s2")
        error = await client.next_event(timeout=10)
        assert error is not None and error.data["code"] == "invalid_request"
        assert f"{srv.replay.epoch}-4 was never sent" in error.data["message"]
        await client.send("subscribe", {"after": None}, id="s3")  # nothing to catch up on
        _say(srv, 4, 4)
        live = await client.next_event(timeout=10)
        assert live is not None and live.eid == f"{srv.replay.epoch}-4"
        await client.close()


async def test_a_replaying_client_that_does_not_read_is_dropped_as_any_other(
    short_dir: Path,
) -> None:
    async with _server(short_dir, client_max_queued_bytes=4096) as srv:
        _say(srv, 1, 400)  # ~20 kB kept, more than one client may have waiting
        reader, writer = await asyncio.open_unix_connection(str(srv.path))
        line = {"method": "subscribe", "params": {"after": f"{srv.replay.epoch}-0"}}
        writer.write(json.dumps(line).encode() + b"\n")
        # Over its bound the moment the replay is queued: dropped before anything is written,
        # and told why.
        lines = (await asyncio.wait_for(reader.read(), 10)).splitlines()
        assert len(lines) == 1
        last = json.loads(lines[0])
        assert srv.queued_bytes == 0
        writer.close()
        assert last["data"]["code"] == "queue_full"
