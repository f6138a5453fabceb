"""Server-Sent Events read from lines: the small part of the WHATWG format the HTTP API uses.

A frame is ``id:``, ``event:`` and ``data:`` fields ended by a blank line; ``data:`` lines
join with newlines; a line starting with ``:`` is a comment (the server's keep-alive); a
field without a colon is a field with an empty value; unknown fields (``retry:``) are
ignored. A frame without ``data`` dispatches nothing, as the standard says.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass

from orchestrator.serving.client_errors import ClientError

__all__ = ["SseFrame", "StreamTooLong", "bounded_lines", "sse_frames"]


@dataclass(frozen=True, slots=True)
class SseFrame:
    """One dispatched event: its name (``message`` when none was given), data, and the id its
    own frame gave (None when it gave none: a reply such as ``resync`` carries no event id)."""

    event: str
    data: str
    id: str | None


class StreamTooLong(ClientError):
    """A line of the events stream, or a frame's data, is longer than the client reads: a
    broken or hostile server; the stream is dropped (and opened again from the last id)."""


async def bounded_lines(chunks: AsyncIterable[str], limit: int) -> AsyncIterator[str]:
    """The lines of a text stream (``\\n``, ``\\r\\n`` or ``\\r`` ended, as SSE allows),
    never holding more than ``limit`` characters of one: :class:`StreamTooLong` instead."""
    parts: list[str] = []  # the line so far, joined only once it ends
    held = 0
    for_next = ""  # a "\r" that ended a chunk: it may be the half of a "\r\n"
    async for chunk in chunks:
        chunk, for_next = for_next + chunk, ""
        if chunk.endswith("\r"):
            chunk, for_next = chunk[:-1], "\r"
        if "\n" not in chunk and "\r" not in chunk:
            parts.append(chunk)
            held += len(chunk)
            if held > limit:
                raise StreamTooLong(f"a line of the events stream passed {limit} characters")
            continue
        text = "".join(parts) + chunk
        *lines, rest = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        for line in lines:
            yield line
        parts, held = [rest], len(rest)
    if for_next or held:
        yield "".join(parts)


async def sse_frames(
    lines: AsyncIterable[str], limit: int = 64 * 1024 * 1024
) -> AsyncIterator[SseFrame]:
    """The frames of a stream given line by line (without their line ends); a frame whose
    data passes ``limit`` characters raises :class:`StreamTooLong`."""
    event, frame_id = "", None
    data: list[str] = []
    async for line in lines:
        if line == "":
            if data:
                yield SseFrame(event or "message", "\n".join(data), frame_id)
            event, data, frame_id = "", [], None
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            event = value
        elif name == "data":
            data.append(value)
            if sum(map(len, data)) > limit:
                raise StreamTooLong(f"an event of the stream passed {limit} characters")
        elif name == "id" and "\0" not in value:
            frame_id = value
