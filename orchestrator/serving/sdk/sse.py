"""Server-Sent Events read from lines: the small part of the WHATWG format the HTTP API uses.

A frame is ``id:``, ``event:`` and ``data:`` fields ended by a blank line; ``data:`` lines
join with newlines; a line starting with ``:`` is a comment (the server's keep-alive); a
field without a colon is a field with an empty value; unknown fields (``retry:``) are
ignored. A frame without ``data`` dispatches nothing, as the standard says.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass

__all__ = ["SseFrame", "sse_frames"]


@dataclass(frozen=True, slots=True)
class SseFrame:
    """One dispatched event: its name (``message`` when none was given), data, and the id its
    own frame gave (None when it gave none: a reply such as ``resync`` carries no event id)."""

    event: str
    data: str
    id: str | None


async def sse_frames(lines: AsyncIterable[str]) -> AsyncIterator[SseFrame]:
    """The frames of a stream given line by line (without their line ends)."""
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
        elif name == "id" and "\0" not in value:
            frame_id = value
