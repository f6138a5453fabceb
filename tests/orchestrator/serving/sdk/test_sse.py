"""The SSE line parser the HTTP transport reads the events stream with, its bounds, and the
HTTP client's one delivery per event id."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from orchestrator.serving.sdk.http import HttpPodClient
from orchestrator.serving.sdk.sse import SseFrame, StreamTooLong, bounded_lines, sse_frames


async def _lines(text: str) -> AsyncIterator[str]:
    for line in text.split("\n"):
        yield line


async def _frames(text: str) -> list[SseFrame]:
    return [frame async for frame in sse_frames(_lines(text))]


async def test_frames_carry_their_own_id_name_and_data() -> None:
    stream = (
        ": keep-alive\n\n"
        'id: k3-1\nevent: text_delta\ndata: {"text": "a"}\n\n'
        'event: resync\ndata: {"reason": "too_old", "epoch": "k4"}\n\n'
        "id: k4-9\ndata: {}\n\n"
    )
    assert await _frames(stream) == [
        SseFrame("text_delta", '{"text": "a"}', "k3-1"),
        # A frame without an id of its own is a reply: the id before it is not its id.
        SseFrame("resync", '{"reason": "too_old", "epoch": "k4"}', None),
        SseFrame("message", "{}", "k4-9"),
    ]


async def test_data_lines_join_comments_and_unknown_fields_are_skipped() -> None:
    stream = "retry: 10\nevent: x\ndata: one\n: a comment between\ndata:two\n\n"
    assert await _frames(stream) == [SseFrame("x", "one\ntwo", None)]


async def test_a_frame_without_data_or_unfinished_dispatches_nothing() -> None:
    assert await _frames("id: k-1\nevent: x\n\nevent: y\ndata: cut off") == []


async def _chunks(*parts: str) -> AsyncIterator[str]:
    for part in parts:
        yield part


async def test_lines_end_at_any_line_end_even_split_across_chunks() -> None:
    chunks = _chunks("id: a\r", "\nevent: x\rdata: 1", "2\n", "\n", ": tail\r")
    lines = [line async for line in bounded_lines(chunks, 100)]
    assert lines == ["id: a", "event: x", "data: 12", "", ": tail"]


async def test_a_line_or_an_event_past_the_limit_ends_the_stream() -> None:
    with pytest.raises(StreamTooLong):
        [line async for line in bounded_lines(_chunks(*["x" * 40] * 5), 100)]
    many = "".join(f"data: {'y' * 30}\n" for _ in range(5)) + "\n"
    with pytest.raises(StreamTooLong):
        [frame async for frame in sse_frames(bounded_lines(_chunks(many), 100), 100)]


async def test_the_http_client_delivers_each_event_id_once() -> None:
    client = HttpPodClient(httpx.AsyncClient(), "p")
    for eid in ("k-1", "k-2", "k-2", "k-1", "k-3", "j-1"):
        client._deliver("status", "{}", eid)
    client._deliver("resync", '{"reason": "restarted", "epoch": "j"}', None)
    client._deliver("status", "not json", "j-2")
    got = client.ready_events()
    assert [(e.event, e.eid) for e in got] == [
        ("status", "k-1"),
        ("status", "k-2"),
        ("status", "k-3"),
        ("status", "j-1"),  # another epoch: the pod started again
        ("resync", None),
        ("status", "j-2"),
    ]
    assert got[-1].data == {} and client.last_eid == "j-2"
    await client.http.aclose()
