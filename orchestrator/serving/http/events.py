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
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Header, Query
from fastapi import Path as PathParam
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

MAX_SSE_CLIENTS = 256
CLIENT_BUFFER_BYTES = 4 * 1024 * 1024
KEEPALIVE_S = 15.0
SEND_TIMEOUT_S = 60.0
"""A client whose socket takes no byte for this long is cut (its buffer is then moot)."""


def frame(event: str, data: dict[str, object], eid: str | None) -> bytes:
    """One SSE frame (the data is one line: JSON escapes newlines)."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return ServerSentEvent(text, event=event, id=eid, sep="\n").encode()


@dataclass(eq=False)
class _Source:
    """One connection to a pod whose events are framed once and handed to its feeds: shared
    by the streams that start live (no ``Last-Event-ID``), private to one that catches up."""

    client: PodClient
    feeds: set[_Feed] = field(default_factory=set)
    pump: asyncio.Task[None] | None = None
    on_end: Callable[[_Source], None] | None = None

    def start(self) -> None:
        self.pump = asyncio.create_task(self._pump())

    @property
    def live(self) -> bool:
        return self.pump is not None and not self.pump.done()

    async def _pump(self) -> None:
        try:
            async for event in self.client.events():
                if event.eid is None and event.event != "resync":
                    if event.event == "error":  # the pod dropped this connection
                        return
                    continue  # a reply to this connection alone
                line = frame(event.event, event.data, event.eid)
                for feed in list(self.feeds):
                    feed.push(line)
        finally:
            for feed in list(self.feeds):
                feed.finish()
            if self.on_end is not None:
                self.on_end(self)

    async def close(self) -> None:
        if self.pump is not None:
            self.pump.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.pump
        await self.client.close()


@dataclass(eq=False)
class _Feed:
    """One SSE client: the frames waiting for it, bounded."""

    source: _Source
    limit: int
    frames: deque[bytes] = field(default_factory=deque)
    held: int = 0
    ended: bool = False
    dropped: bool = False
    wake: asyncio.Event = field(default_factory=asyncio.Event)

    def push(self, line: bytes) -> None:
        """One frame for this client; over the bound, the client is dropped."""
        if self.ended:
            return
        self.frames.append(line)
        self.held += len(line)
        if self.held > self.limit:
            log.warning("an SSE client fell %d bytes behind; dropped", self.held)
            self.dropped = True
            self.frames.clear()
            self.held = 0
            self.source.feeds.discard(self)
            self.finish()
            return
        self.wake.set()

    def finish(self) -> None:
        """No more frames come: the stream ends once those waiting are sent."""
        self.ended = True
        self.wake.set()

    def end(self) -> None:
        """End the stream (the server stops)."""
        self.finish()

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


@dataclass(eq=False)
class EventStreams:
    """The open SSE streams of one server."""

    max_clients: int = MAX_SSE_CLIENTS
    buffer_bytes: int = CLIENT_BUFFER_BYTES
    feeds: set[_Feed] = field(default_factory=set)
    opening: int = 0
    """Streams whose connection to the pod is being made (they count against the bound)."""
    live: dict[Path, _Source] = field(default_factory=dict)
    """The shared connection of each pod (by socket) for streams that start live."""
    _closing: set[asyncio.Task[None]] = field(default_factory=set)

    async def open(self, ctx: HttpContext, name: str, after: str | None) -> _Feed:
        """A stream of ``name``'s events after ``after``; :class:`ApiError` 404 for an
        unknown pod, 503 past :attr:`max_clients` or when the pod cannot be reached."""
        socket = ctx.socket_for(name)
        if len(self.feeds) + self.opening >= self.max_clients:
            raise ApiError(
                503,
                "too_many_streams",
                f"{self.max_clients} event streams are open on this server; close one",
            )
        self.opening += 1
        try:
            source = self.live.get(socket) if after is None else None
            if source is None or not source.live:
                source = await self._connect(name, socket, after)
        finally:
            self.opening -= 1
        feed = _Feed(source, self.buffer_bytes)
        source.feeds.add(feed)
        self.feeds.add(feed)
        return feed

    async def _connect(self, name: str, socket: Path, after: str | None) -> _Source:
        try:
            client = await PodClient.connect(socket, timeout=30.0, after=after)
        except ClientError as exc:
            raise ApiError(503, "unavailable", f"pod {name} cannot be reached: {exc}") from None
        source = _Source(client)
        if after is None:
            # Another stream may have connected meanwhile: keep one, close this one.
            shared = self.live.get(socket)
            if shared is not None and shared.live:
                self._close_soon(source)
                return shared
            self.live[socket] = source
            source.on_end = lambda ended: self._forget(socket, ended)
        source.start()
        return source

    def _forget(self, socket: Path, source: _Source) -> None:
        if self.live.get(socket) is source:
            del self.live[socket]

    def _close_soon(self, source: _Source) -> None:
        task = asyncio.get_running_loop().create_task(source.close())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def close_feed(self, feed: _Feed) -> None:
        """Let ``feed`` go, and its pod connection with its last feed."""
        self.feeds.discard(feed)
        source = feed.source
        source.feeds.discard(feed)
        feed.finish()
        if not source.feeds:
            for socket, shared in list(self.live.items()):
                if shared is source:
                    del self.live[socket]
            await source.close()

    async def frames(self, feed: _Feed) -> AsyncIterator[bytes]:
        try:
            async for line in feed.stream():
                yield line
        finally:
            # Closed in a task of its own: this may run inside a cancelled scope.
            task = asyncio.get_running_loop().create_task(self.close_feed(feed))
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
        name: Annotated[str, PathParam(min_length=1, max_length=64)],
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
