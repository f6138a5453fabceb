"""SSE: a client that reconnects with ``Last-Event-ID`` (or ``?after=``) gets exactly the
events it missed, in order; one from an earlier start of the pod gets ``resync``; a client
that does not read is dropped without slowing the pod; at most 64 streams."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.orchestrator.serving.http.api import Api, Stream, add_pod, sse_frames, workspace


async def test_a_reconnecting_client_gets_exactly_what_it_missed(api: Api, tmp_path: Path) -> None:
    http = api.client()
    await add_pod(http, workspace(tmp_path, "demo"), name="p")
    whole = Stream(api.client(), "/v1/pods/p/events")  # reads everything, the reference
    early = Stream(api.client(), "/v1/pods/p/events")
    try:
        await http.post("/v1/pods/p/runs", json={"input": "first"})
        await early.until("run_end")
        await early.close()
        last = next(f.id for f in reversed(early.frames) if f.id)
        # Missed while away: a whole turn.
        await http.post("/v1/pods/p/runs", json={"input": "second"})
        await whole.until("run_end", result="finished")
        await asyncio.wait_for(_until_count(whole, "run_end", 2), 60)
        expected = [(f.id, f.event, f.data) for f in whole.frames]
        expected = expected[[i for i, _, _ in expected].index(last) + 1 :]
        assert [e for _, e, _ in expected].count("run_end") == 1
        for path, headers in (
            ("/v1/pods/p/events", {"Last-Event-ID": last}),
            (f"/v1/pods/p/events?after={last}", None),
        ):
            back = Stream(api.client(), path, headers)
            try:
                await back.until("run_end")
                got = [(f.id, f.event, f.data) for f in back.frames]
                assert got[: len(expected)] == expected
                assert not [f for f in back.frames if f.event == "resync"]
            finally:
                await back.close()
    finally:
        await whole.close()


async def _until_count(stream: Stream, event: str, count: int) -> None:
    while [f.event for f in stream.frames].count(event) < count:
        await stream.until(event)
        await asyncio.sleep(0.05)


async def test_an_id_of_an_earlier_start_gets_resync(api: Api, tmp_path: Path) -> None:
    http = api.client()
    await add_pod(http, workspace(tmp_path, "demo"), name="p")
    stream = Stream(api.client(), "/v1/pods/p/events", {"Last-Event-ID": "0ld3p0ch-41"})
    try:
        first = await stream.until("resync")
        assert first is stream.frames[0]
        assert first.data["reason"] and first.data["epoch"] != "0ld3p0ch"
        await http.post("/v1/pods/p/runs", json={"input": "after the resync"})
        end = await stream.until("run_end")
        assert end.id is not None and end.id.startswith(first.data["epoch"] + "-")
    finally:
        await stream.close()
    bad = await http.get("/v1/pods/p/events", headers={"Last-Event-ID": "not an id"})
    assert bad.status_code == 422


async def test_a_client_that_does_not_read_is_dropped_and_the_pod_goes_on(
    api: Api, tmp_path: Path
) -> None:
    # The socket buffers between the server and a real client hold megabytes; the bound is
    # on what the server keeps for a stream beyond them, so a stream is opened here as the
    # route opens it, and never read from.
    http = api.client()
    await add_pod(http, workspace(tmp_path, "demo"), name="p")
    streams = api.server.app.state.streams
    streams.buffer_bytes = 4096
    sleeper = await streams.open(api.server.app.state.ctx, "p", None)
    reader = Stream(api.client(), "/v1/pods/p/events")
    try:
        await http.post("/v1/pods/p/runs", json={"input": "a turn of a few kB of events"})
        await reader.until("run_end", result="finished")
        assert sum(len(f.data.get("text", "")) for f in reader.frames) > 100
        assert sleeper.dropped and sleeper.ended
        assert sleeper.held == 0 and not sleeper.frames  # what it held is let go
        assert [line async for line in sleeper.stream()] == []  # its stream ends at once
    finally:
        streams.feeds.discard(sleeper)
        await sleeper.close()
        await reader.close()


async def test_at_most_64_streams_then_503(api: Api, tmp_path: Path) -> None:
    http = api.client()
    await add_pod(http, workspace(tmp_path, "demo"), name="p")
    streams = api.server.app.state.streams
    streams.max_clients = 3
    opened = [Stream(api.client(), "/v1/pods/p/events") for _ in range(3)]
    try:
        for _ in range(200):
            if len(streams.feeds) == 3:
                break
            await asyncio.sleep(0.02)
        assert len(streams.feeds) == 3
        refused = await http.get("/v1/pods/p/events")
        assert refused.status_code == 503
        assert refused.json()["error"]["code"] == "too_many_streams"
    finally:
        for stream in opened:
            await stream.close()
    for _ in range(200):  # a closed stream frees its place
        if not streams.feeds:
            break
        await asyncio.sleep(0.02)
    async for frame in sse_frames(http, "/v1/pods/p/events", {"Last-Event-ID": "zz-1"}):
        assert frame.event == "resync"
        break
