"""A small asyncio client for the pod protocol (used by the CLI, the TUI, the kit and the tests).

Events arrive on :meth:`PodClient.events` as :class:`PodEvent`: the event's name, the data as
sent (``data``), and that data typed by the protocol's own pydantic models (``payload``).
:meth:`PodClient.request` sends a method with an id and waits for the direct reply carrying
that id (``status``, ``history``, ``file_completions`` or ``error``); :meth:`PodClient.status`,
:meth:`PodClient.history` and :meth:`PodClient.complete_files` return the typed reply.

A client must keep working against a newer pod: an event it does not know, or one whose data
does not validate, arrives with an :class:`UnknownEvent` payload instead of breaking the
connection, and fields a newer pod added to a known event are ignored. A line that is not an
event at all (not JSON, no name) is a :class:`BadLine`; :class:`PodClient` takes it for a
broken connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeAlias, TypeVar

from pydantic import BaseModel, ValidationError

from orchestrator.errors import PodRuntimeError
from orchestrator.protocol import (
    EVENT_DATA,
    EVENT_ID_RE,
    AlertData,
    ApprovalRequestData,
    ApprovalResolvedData,
    ChildData,
    CitationData,
    ClientIoRequestData,
    CommandsData,
    CompactionData,
    ElicitationRequestData,
    ElicitationResolvedData,
    ErrorData,
    FileCompletionsData,
    ForkedData,
    HistoryData,
    ModelsData,
    ResyncData,
    RewindData,
    RunEndData,
    ServerToolCallData,
    ServerToolResultData,
    ShutdownData,
    StatsData,
    StatusData,
    SystemNoteData,
    TextData,
    ThinkingData,
    TodosData,
    ToolCallArgsDeltaData,
    ToolCallDoneData,
    ToolCallStartData,
    ToolOutputDeltaData,
    ToolResultData,
    TurnEndData,
    TurnStartData,
    UsageData,
    UserMessageData,
)

__all__ = [
    "MAX_LINE_BYTES",
    "BadLine",
    "ClientError",
    "EventData",
    "PodClient",
    "PodEvent",
    "UnknownEvent",
    "close_connection",
    "decode_line",
    "read_events",
]

MAX_LINE_BYTES = 64 * 1024 * 1024
"""The longest event line a client reads (a ``history`` reply can be large)."""

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


class ClientError(PodRuntimeError):
    """The pod cannot be reached, the connection broke, or a request was refused."""


@dataclass(frozen=True, slots=True)
class UnknownEvent:
    """An event this client cannot type: a newer pod's event, or data that does not validate."""

    problem: str
    """Why it could not be typed, for logs and error messages."""


EventData: TypeAlias = (
    StatusData
    | UserMessageData
    | TurnStartData
    | TextData
    | ThinkingData
    | ToolCallStartData
    | ToolCallArgsDeltaData
    | ServerToolCallData
    | ServerToolResultData
    | CitationData
    | TodosData
    | ToolOutputDeltaData
    | ToolCallDoneData
    | ToolResultData
    | SystemNoteData
    | UsageData
    | TurnEndData
    | RunEndData
    | ErrorData
    | AlertData
    | HistoryData
    | FileCompletionsData
    | CommandsData
    | StatsData
    | ShutdownData
    | ChildData
    | CompactionData
    | ApprovalRequestData
    | ApprovalResolvedData
    | ElicitationRequestData
    | ElicitationResolvedData
    | RewindData
    | ForkedData
    | ModelsData
    | ClientIoRequestData
    | ResyncData
    | UnknownEvent
)
"""The typed data of any event (``text_delta`` and ``text_done`` share :class:`TextData`)."""

D = TypeVar("D", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class PodEvent:
    """One event from the pod: its name, ``data`` as sent, and ``payload``, the data typed."""

    event: str
    data: dict[str, Any] = field(default_factory=dict)
    """The wire view: exactly the keys the pod sent (tests and ``--json`` output read it)."""
    eid: str | None = None
    """The event's id (``"<epoch>-<n>"``) when it went to every client; None on a reply to
    this client alone. The last one seen is what :meth:`PodClient.subscribe` takes."""
    payload: EventData = field(init=False, repr=False, compare=False)
    """The protocol's model for this event's data, or :class:`UnknownEvent`."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "payload", _typed(self.event, self.data))

    def expect(self, model: type[D]) -> D:
        """The payload as ``model``; an ``error`` reply or another event raises ClientError."""
        if isinstance(self.payload, model):
            return self.payload
        if isinstance(self.payload, ErrorData):
            raise ClientError(f"the pod refused: {self.payload.code}: {self.payload.message}")
        raise ClientError(f"expected {model.__name__}, the pod sent {self.event!r}")


def _typed(event: str, data: dict[str, Any]) -> EventData:
    """Type one event's data leniently: see the module's docstring."""
    model = EVENT_DATA.get(event)
    if model is None:
        return UnknownEvent(f"unknown event {event!r}")
    try:
        return model.model_validate(data)  # type: ignore[return-value]
    except ValidationError as exc:
        error = exc
    # A newer pod may add fields to a known event: drop the ones this client does not know.
    known = set(model.model_fields) | {f.alias for f in model.model_fields.values() if f.alias}
    trimmed = {k: v for k, v in data.items() if k in known}
    if len(trimmed) < len(data):
        try:
            return model.model_validate(trimmed)  # type: ignore[return-value]
        except ValidationError as exc:
            error = exc
    first = error.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "data"
    return UnknownEvent(f"{event!r} data does not validate: {where}: {first['msg']}")


@dataclass(frozen=True, slots=True)
class BadLine:
    """A line from the pod that is not an event: not JSON, or no ``event`` name."""

    text: str


def decode_line(line: bytes) -> PodEvent | BadLine:
    """One line as an event, typed leniently (data that does not validate is still an event)."""
    try:
        raw = json.loads(line)
    except ValueError:
        raw = None
    if not isinstance(raw, dict) or not isinstance(raw.get("event"), str):
        return BadLine(line.decode(errors="replace"))
    data = raw.get("data") or {}
    if not isinstance(data, dict):
        return BadLine(line.decode(errors="replace"))
    eid = raw.get("eid")
    return PodEvent(raw["event"], data, eid if isinstance(eid, str) else None)


async def read_events(reader: asyncio.StreamReader) -> AsyncIterator[PodEvent | BadLine]:
    """Events from the pod, one per line, until it closes the connection.

    Connection errors, and a line longer than the reader's limit, propagate to the caller.
    """
    while True:
        line = await reader.readline()
        if not line:
            return
        yield decode_line(line)


async def close_connection(writer: asyncio.StreamWriter, reader_task: asyncio.Task[None]) -> None:
    """Close a connection, then stop the task reading it; neither may raise."""
    writer.close()
    with contextlib.suppress(Exception):
        await writer.wait_closed()
    reader_task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await reader_task


class PodClient:
    """One connection to a pod."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
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
        client = cls(reader, writer)
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
        request_id = f"c{next(_ids)}"
        future: asyncio.Future[PodEvent] = asyncio.get_running_loop().create_future()
        self._waiters[request_id] = future
        await self.send(method, params, id=request_id)
        try:
            return await asyncio.wait_for(future, timeout)
        finally:
            self._waiters.pop(request_id, None)

    async def status(self, *, timeout: float = 10.0) -> StatusData:
        """``get_status``, typed."""
        return (await self.request("get_status", timeout=timeout)).expect(StatusData)

    async def models(self, *, timeout: float = 30.0) -> ModelsData:
        """``list_models``, typed (the provider may be asked over the network)."""
        return (await self.request("list_models", timeout=timeout)).expect(ModelsData)

    async def history(self, *, timeout: float = 10.0) -> HistoryData:
        """``get_history``, typed."""
        return (await self.request("get_history", timeout=timeout)).expect(HistoryData)

    async def complete_files(
        self, prefix: str, *, limit: int = 50, timeout: float = 10.0
    ) -> list[str]:
        """The pod's ``@`` completion candidates for ``prefix``."""
        reply = await self.request(
            "complete_files", {"prefix": prefix, "limit": limit}, timeout=timeout
        )
        return reply.expect(FileCompletionsData).candidates

    async def commands(self, *, timeout: float = 10.0) -> CommandsData:
        """``list_commands``, typed: the custom slash commands the pod offers."""
        return (await self.request("list_commands", timeout=timeout)).expect(CommandsData)

    async def stats(self, *, timeout: float = 10.0) -> StatsData:
        """``get_stats``, typed: per-turn usage and seconds by lifecycle state."""
        return (await self.request("get_stats", timeout=timeout)).expect(StatsData)

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
