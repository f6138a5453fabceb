"""The client's view of the pod's lines: each event typed by the protocol's models.

An event arrives as :class:`PodEvent`: the event's name, the data as sent (``data``), and that
data typed by the protocol's own pydantic models (``payload``). A client must keep working
against a newer pod: an event it does not know, or one whose data does not validate, arrives
with an :class:`UnknownEvent` payload instead of breaking the connection, and fields a newer pod
added to a known event are ignored. A line that is not an event at all (not JSON, no name) is a
:class:`BadLine`. Split from :mod:`orchestrator.serving.client`, which re-exports every name.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, TypeAlias, TypeVar

from pydantic import BaseModel, ValidationError

from orchestrator.protocol import (
    EVENT_DATA,
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
from orchestrator.serving.client_errors import ClientError, request_error

__all__ = [
    "MAX_LINE_BYTES",
    "BadLine",
    "EventData",
    "PodEvent",
    "UnknownEvent",
    "close_connection",
    "decode_line",
    "read_events",
]

MAX_LINE_BYTES = 64 * 1024 * 1024
"""The longest event line a client reads (a ``history`` reply can be large)."""


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
        """The payload as ``model``; an ``error`` reply raises its code's
        :class:`~orchestrator.serving.client_errors.PodRequestError`, another event
        :class:`ClientError`."""
        if isinstance(self.payload, model):
            return self.payload
        if isinstance(self.payload, ErrorData):
            raise request_error(self.payload.code, self.payload.message)
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
