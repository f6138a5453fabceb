"""The SSE line parser the HTTP transport reads the events stream with."""

from __future__ import annotations

from collections.abc import AsyncIterator

from orchestrator.serving.sdk.sse import SseFrame, sse_frames


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
