"""``GET /v1/pods/{name}/events``: the pod's broadcast events as Server-Sent Events.

Each SSE client gets a connection of its own to the pod, which ``subscribe``s with the
client's ``Last-Event-ID`` (or ``?after=``): a client that reconnects gets what it missed from
the pod's replay buffer, each event once and in order, or one ``resync`` event when the pod
cannot (it restarted, or no longer keeps them). One frame per event: ``id:`` its ``eid``,
``event:`` its name, ``data:`` its data as one line of JSON.

A client that does not read is dropped once :data:`CLIENT_BUFFER_BYTES` of frames wait for
it: its stream ends (a browser reconnects with ``Last-Event-ID`` and catches up), the pod and
the other clients never wait for it. At most :data:`MAX_SSE_CLIENTS` streams at once (then
503); a ``: keep-alive`` comment every :data:`KEEPALIVE_S`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Annotated

from fastapi import APIRouter, Header, Path, Query
from sse_starlette import EventSourceResponse, ServerSentEvent

from orchestrator.protocol import EVENT_ID_RE
from orchestrator.serving.client import ClientError, PodClient
from orchestrator.serving.http.context import ApiError, HttpContext

__all__ = [
    "CLIENT_BUFFER_BYTES",
    "KEEPALIVE_S",
    "MAX_SSE_CLIENTS",
    "EventStreams",
    "events_router",
]

log = logging.getLogger(__name__)

MAX_SSE_CLIENTS = 64
CLIENT_BUFFER_BYTES = 4 * 1024 * 1024
KEEPALIVE_S = 15.0
SEND_TIMEOUT_S = 60.0
"""A client whose socket takes no byte for this long is cut (its buffer is then moot)."""


def frame(event: str, data: dict[str, object], eid: str | None) -> bytes:
    """One SSE frame (the data is one line: JSON escapes newlines)."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return ServerSentEvent(text, event=event, id=eid, sep="\n").encode()


@dataclass(eq=False)
class _Feed:
    """One SSE client's connection to the pod and the frames waiting for it."""

    client: PodClient
    limit: int
    frames: deque[bytes] = field(default_factory=deque)
    held: int = 0
    ended: bool = False
    dropped: bool = False
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    pump: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.pump = asyncio.create_task(self._pump())

    async def _pump(self) -> None:
        try:
            async for event in self.client.events():
                if event.eid is None and event.event != "resync":
                    if event.event == "error":  # the pod dropped this connection
                        return
                    continue  # a reply to this connection alone
                line = frame(event.event, event.data, event.eid)
                self.frames.append(line)
                self.held += len(line)
                if self.held > self.limit:
                    log.warning("an SSE client fell %d bytes behind; dropped", self.held)
                    self.dropped = True
                    self.frames.clear()
                    self.held = 0
                    return
                self.wake.set()
        finally:
            self.ended = True
            self.wake.set()

    def end(self) -> None:
        """End the stream (the server stops)."""
        self.ended = True
        self.wake.set()

    async def stream(self) -> AsyncIterator[bytes]:
        while True:
            while self.frames and not self.dropped:
                line = self.frames.popleft()
                self.held -= len(line)
                yield line
            if self.ended:
                return
            self.wake.clear()
            await self.wake.wait()

    async def close(self) -> None:
        if self.pump is not None:
            self.pump.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.pump
        await self.client.close()


@dataclass(eq=False)
class EventStreams:
    """The open SSE streams of one server."""

    max_clients: int = MAX_SSE_CLIENTS
    buffer_bytes: int = CLIENT_BUFFER_BYTES
    feeds: set[_Feed] = field(default_factory=set)
    _closing: set[asyncio.Task[None]] = field(default_factory=set)

    async def open(self, ctx: HttpContext, name: str, after: str | None) -> _Feed:
        socket = ctx.socket_for(name)
        if len(self.feeds) >= self.max_clients:
            raise ApiError(
                503,
                "too_many_streams",
                f"{self.max_clients} event streams are open on this server; close one",
            )
        try:
            client = await PodClient.connect(socket, timeout=30.0, after=after)
        except ClientError as exc:
            raise ApiError(503, "unavailable", f"pod {name} cannot be reached: {exc}") from None
        feed = _Feed(client, self.buffer_bytes)
        self.feeds.add(feed)
        feed.start()
        return feed

    async def frames(self, feed: _Feed) -> AsyncIterator[bytes]:
        try:
            async for line in feed.stream():
                yield line
        finally:
            # Closed in a task of its own: this may run inside a cancelled scope.
            self.feeds.discard(feed)
            task = asyncio.get_running_loop().create_task(feed.close())
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)

    def end_all(self) -> None:
        """End every stream (the server stops)."""
        for feed in list(self.feeds):
            feed.end()


def events_router(ctx: HttpContext, streams: EventStreams) -> APIRouter:
    """The events route."""
    router = APIRouter(prefix="/v1")

    @router.get(
        "/pods/{name}/events",
        tags=["events"],
        response_class=EventSourceResponse,
        responses={200: {"content": {"text/event-stream": {}}}},
    )
    async def events(
        name: Annotated[str, Path(min_length=1, max_length=64)],
        after: Annotated[str | None, Query(max_length=64)] = None,
        last_event_id: Annotated[str | None, Header(max_length=64)] = None,
    ) -> EventSourceResponse:
        """The pod's events as SSE, from after ``Last-Event-ID`` (or ``after``) when given."""
        cursor = last_event_id or after
        if cursor is not None and EVENT_ID_RE.fullmatch(cursor) is None:
            raise ApiError(
                422, "invalid_request", "Last-Event-ID/after: not an event id ('<epoch>-<n>')"
            )
        feed = await streams.open(ctx, name, cursor)
        return EventSourceResponse(
            streams.frames(feed),
            ping=KEEPALIVE_S,
            ping_message_factory=lambda: ServerSentEvent(comment="keep-alive"),
            send_timeout=SEND_TIMEOUT_S,
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )

    return router
