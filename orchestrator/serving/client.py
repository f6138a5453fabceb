"""A small asyncio client for the pod protocol over its Unix socket (used by the CLI, the TUI,
the kit, the tests, and the SDK: docs/sdk.md).

Events arrive on :meth:`PodClient.events` as :class:`PodEvent`: the event's name, the data as
sent (``data``), and that data typed by the protocol's own pydantic models (``payload``);
:mod:`orchestrator.serving.client_events` says how a newer pod's events are read.
:meth:`PodClient.request` sends a method with an id and waits for the direct reply carrying
that id (``status``, ``history``, ``file_completions`` or ``error``). The SDK's calls
(:meth:`~orchestrator.serving.pod_calls.PodCalls.run`, ``pause``, ``approve``…) come from
:class:`~orchestrator.serving.pod_calls.PodCalls`, the same over the HTTP API.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from orchestrator.protocol import EVENT_ID_RE, FileCompletionsData
from orchestrator.serving.client_errors import ClientError, PodRequestError, request_error
from orchestrator.serving.client_events import (
    MAX_LINE_BYTES,
    BadLine,
    EventData,
    PodEvent,
    UnknownEvent,
    close_connection,
    decode_line,
    read_events,
)
from orchestrator.serving.pod_calls import PodCalls

__all__ = [
    "MAX_LINE_BYTES",
    "BadLine",
    "ClientError",
    "EventData",
    "PodClient",
    "PodEvent",
    "PodRequestError",
    "UnknownEvent",
    "close_connection",
    "decode_line",
    "read_events",
]

_ids = itertools.count(1)
_REPLY_EVENTS = frozenset(
    {
        "status",
        "history",
        "file_completions",
        "error",
        "rewind_preview",
        "forked",
        "models",
        "commands",
        "stats",
    }
)


class PodClient(PodCalls):
    """One connection to a pod's socket; with the SDK's calls (:class:`PodCalls`)."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        path: Path | str | None = None,
    ) -> None:
        self.path = Path(path) if path is not None else None
        """The socket connected to (:meth:`reconnect` connects there again)."""
        self._reader = reader
        self._writer = writer
        self._queue: asyncio.Queue[PodEvent | None] = asyncio.Queue()
        self._waiters: dict[Any, asyncio.Future[PodEvent]] = {}
        self._catching_up: tuple[str, int] | None = None
        """While a ``subscribe`` is answered: the epoch and ``n`` of the event due next."""
        self._held: dict[int, PodEvent] = {}
        """Events that came ahead of the ones due (written before the pod read ``subscribe``)."""
        self._pump = asyncio.create_task(self._read_loop())
        self.last_eid: str | None = None
        """The id of the last broadcast event read from the pod (what a new connection
        passes to :meth:`subscribe` to get what it missed)."""

    @classmethod
    async def connect(
        cls, path: Path | str, *, timeout: float = 5.0, after: str | None = None
    ) -> PodClient:
        """Connect to a pod's socket; with ``after`` (an earlier connection's
        :attr:`last_eid`), catch up from it first (:meth:`subscribe`)."""
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_unix_connection(str(path), limit=MAX_LINE_BYTES), timeout
            )
        except (OSError, TimeoutError) as exc:
            raise ClientError(f"no pod is listening on {path} ({exc})") from None
        client = cls(reader, writer, path=path)
        if after is not None:
            await client.subscribe(after)  # before the pump reads a line: nothing to reorder
        return client

    async def _read_loop(self) -> None:
        try:
            async for event in read_events(self._reader):
                if isinstance(event, BadLine):
                    break  # a pod that sends garbage is a broken connection to this client
                waiter = (
                    self._waiters.pop(event.data.get("id"), None)
                    if event.event in _REPLY_EVENTS
                    else None
                )
                if waiter is not None and not waiter.done():
                    waiter.set_result(event)
                elif self._catching_up is not None:
                    self._in_order(event)
                else:
                    self._deliver(event)
        except (ConnectionError, ValueError, asyncio.IncompleteReadError):
            pass
        finally:
            self._queue.put_nowait(None)
            for waiter in self._waiters.values():
                if not waiter.done():
                    waiter.set_exception(ClientError("the pod closed the connection"))

    async def send(
        self, method: str, params: dict[str, Any] | None = None, *, id: Any = None
    ) -> None:
        """Send one method line."""
        message: dict[str, Any] = {"method": method, "params": params or {}}
        if id is not None:
            message["id"] = id
        await self.send_raw(json.dumps(message).encode() + b"\n")

    async def send_raw(self, data: bytes) -> None:
        """Send raw bytes (for tests of malformed input)."""
        try:
            self._writer.write(data)
            await self._writer.drain()
        except (ConnectionError, OSError) as exc:
            raise ClientError(f"connection to the pod broke: {exc}") from None

    async def request(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float = 10.0
    ) -> PodEvent:
        """Send a method with a fresh id and wait for the reply carrying it."""
        if self._pump.done():  # nothing reads this connection: no reply would ever come
            raise ClientError("the pod closed the connection")
        request_id = f"c{next(_ids)}"
        future: asyncio.Future[PodEvent] = asyncio.get_running_loop().create_future()
        self._waiters[request_id] = future
        try:
            await self.send(method, params, id=request_id)
            return await asyncio.wait_for(future, timeout)
        finally:
            self._waiters.pop(request_id, None)
            if future.done() and not future.cancelled():
                future.exception()  # the connection's end, told by the raise: retrieved

    async def accepted(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float = 10.0
    ) -> None:
        """Send a method whose only direct reply is an error, and return once the pod took it.

        The pod answers a connection's lines in order: a ``get_status`` sent after it and
        answered with no ``error`` carrying the method's id first means it was taken; such an
        error raises its code's :class:`PodRequestError`."""
        method_id = f"c{next(_ids)}"
        refusal: asyncio.Future[PodEvent] = asyncio.get_running_loop().create_future()
        self._waiters[method_id] = refusal
        try:
            await self.send(method, params, id=method_id)
            await self.request("get_status", timeout=timeout)
        finally:
            self._waiters.pop(method_id, None)
            failed = refusal.done() and refusal.exception() is not None  # retrieved: no warning
        if refusal.done() and not failed:
            error = refusal.result()
            raise request_error(str(error.data.get("code")), str(error.data.get("message")))

    async def reconnect(self, *, timeout: float = 5.0) -> None:
        """Connect to :attr:`path` again, in place, and catch up from :attr:`last_eid` (each
        missed event once, or a ``resync``); :class:`ClientError` when nothing listens there."""
        if self.path is None:
            raise ClientError("this connection was made without a path to connect to again")
        await close_connection(self._writer, self._pump)
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_unix_connection(str(self.path), limit=MAX_LINE_BYTES), timeout
            )
        except (OSError, TimeoutError) as exc:
            raise ClientError(f"no pod is listening on {self.path} ({exc})") from None
        self._reader, self._writer = reader, writer
        self._queue = asyncio.Queue()
        self._catching_up, self._held = None, {}
        self._pump = asyncio.create_task(self._read_loop())
        if self.last_eid is not None:
            await self.subscribe(self.last_eid)

    async def complete_files(
        self, prefix: str, *, limit: int = 50, timeout: float = 10.0
    ) -> list[str]:
        """The pod's ``@`` completion candidates for ``prefix``."""
        reply = await self.request(
            "complete_files", {"prefix": prefix, "limit": limit}, timeout=timeout
        )
        return reply.expect(FileCompletionsData).candidates

    async def subscribe(self, after: str | None) -> None:
        """Ask for the events broadcast after ``after`` (an earlier connection's
        :attr:`last_eid`): they arrive in order before the live ones, each once; or one
        ``resync`` event when the pod restarted or no longer keeps them (then fetch
        :meth:`status` and :meth:`history`). Events this connection got before the pod read it
        are put back in order here; those already taken from this client stay taken."""
        if after is not None:
            match = EVENT_ID_RE.fullmatch(after)
            if match is not None:
                self._catching_up = (match["epoch"], int(match["n"]) + 1)
        await self.send("subscribe", {"after": after})

    def _deliver(self, event: PodEvent) -> None:
        if event.eid is not None:
            self.last_eid = event.eid  # in order: everything up to it has been delivered
        self._queue.put_nowait(event)

    def _in_order(self, event: PodEvent) -> None:
        """Queue ``event`` in id order while a ``subscribe`` is answered: events written to
        this connection before the pod read it come ahead of the missed ones they follow."""
        assert self._catching_up is not None
        epoch, due = self._catching_up
        match = EVENT_ID_RE.fullmatch(event.eid or "")
        if event.event == "resync" or (match is not None and match["epoch"] != epoch):
            self._catching_up = None  # nothing is replayed: what is held is all there is
            for n in sorted(self._held):
                self._deliver(self._held.pop(n))
            self._deliver(event)
            return
        if match is None:
            self._deliver(event)  # a reply to this client alone
            return
        n = int(match["n"])
        if n < due:
            return  # at or before ``after``: the caller said it has it
        self._held[n] = event
        while due in self._held:
            self._deliver(self._held.pop(due))
            due += 1
        self._catching_up = (epoch, due) if self._held else None

    def ready_events(self) -> list[PodEvent]:
        """Broadcast events that already arrived, without waiting (to handle them as a batch)."""
        ready: list[PodEvent] = []
        while not self._queue.empty():
            event = self._queue.get_nowait()
            if event is None:
                self._queue.put_nowait(None)  # the end stays for the next reader
                break
            ready.append(event)
        return ready

    async def next_event(self, timeout: float | None = None) -> PodEvent | None:
        """The next broadcast event, or None when the connection closed."""
        if timeout is None:
            return await self._queue.get()
        return await asyncio.wait_for(self._queue.get(), timeout)

    async def events(self) -> AsyncIterator[PodEvent]:
        """Iterate over broadcast events until the pod closes the connection."""
        while True:
            event = await self._queue.get()
            if event is None:
                return
            yield event

    async def wait_for(self, event: str, *, timeout: float = 10.0, **match: Any) -> PodEvent:
        """Skip events until one named ``event`` whose data matches ``match`` arrives."""

        async def scan() -> PodEvent:
            while True:
                got = await self._queue.get()
                if got is None:
                    raise ClientError(f"connection closed while waiting for {event}")
                if got.event == event and all(got.data.get(k) == v for k, v in match.items()):
                    return got

        return await asyncio.wait_for(scan(), timeout)

    async def close(self) -> None:
        """Close the connection."""
        await close_connection(self._writer, self._pump)
