"""Pod to client, the stream of a turn: the prompt committed, text and thinking, tool calls
and their output, usage, the turn's and the run's end, errors, alerts and system notes."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field

from orchestrator.core.segments import Segment
from orchestrator.protocol.data import EventData

__all__ = [
    "AlertData",
    "CitationData",
    "ErrorCode",
    "ErrorData",
    "ResyncData",
    "RunEndData",
    "RunResult",
    "ServerToolCallData",
    "ServerToolResultData",
    "SourceData",
    "SystemNoteData",
    "TextData",
    "ThinkingData",
    "ToolCallArgsDeltaData",
    "ToolCallDoneData",
    "ToolCallStartData",
    "ToolOutputDeltaData",
    "ToolResultData",
    "TurnEndData",
    "TurnStartData",
    "UsageData",
    "UserMessageData",
]

ErrorCode = Literal[
    "already_running",
    "not_running",
    "not_paused",
    "invalid_request",
    "provider_error",
    "tool_error",
    "session_write",
    "queue_full",
    "not_awaiting_approval",
    "not_awaiting_input",
    "internal",
    "forbidden",
    "duplicate",
]
RunResult = Literal["finished", "paused", "cancelled", "limit_reached", "errored"]


class UserMessageData(EventData):
    """A user message was committed."""

    segments: list[Segment]
    seq: int | None = None
    """The committed item's ``seq`` (absent on deltas): lets a client skip what history showed."""


class TurnStartData(EventData):
    """A turn began (or resumed)."""

    turn: int
    resumed: bool = False


class TextData(EventData):
    """Assistant text, as a delta or the whole block."""

    text: str
    seq: int | None = None
    """The committed item's ``seq`` (absent on deltas): lets a client skip what history showed."""
    citations: Annotated[list[CitationData] | None, Field(exclude_if=lambda v: v is None)] = None
    """On ``text_done``: the block's citations (where a client puts its ``[n]``); else absent."""


class ThinkingData(EventData):
    """Assistant thinking text."""

    text: str


class ToolCallStartData(EventData):
    """The model began a tool call (or a synthetic Read was injected)."""

    id: str
    name: str


class ToolOutputDeltaData(EventData):
    """Output a running tool (``bash``) printed just now; the result still carries it all."""

    id: str
    text: str


class ToolCallArgsDeltaData(EventData):
    """A fragment of a tool call's JSON arguments."""

    id: str
    json_: str = Field(alias="json")

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class ToolCallDoneData(EventData):
    """A tool call's arguments are complete."""

    id: str
    name: str
    arguments: dict[str, Any]
    seq: int | None = None
    """The committed item's ``seq`` (absent on deltas): lets a client skip what history showed."""


class ToolResultData(EventData):
    """A tool call's result was committed."""

    id: str
    summary: str
    content: str | None
    is_error: bool
    synthetic: bool = False
    seq: int | None = None
    """The committed item's ``seq`` (absent on deltas): lets a client skip what history showed."""


class ServerToolCallData(EventData):
    """The API began one of its own tools: a web search (``input.query``) or a web fetch
    (``input.url``). The pod does not run it and nobody approves it."""

    id: str
    name: str
    input: dict[str, Any]


class SourceData(EventData):
    """A page a server tool's result lists."""

    url: str
    title: str | None = None


class ServerToolResultData(EventData):
    """A server tool's result, as people see it (the encrypted content stays in history)."""

    id: str
    """The server call it answers."""
    name: str
    """``web_search`` or ``web_fetch``."""
    sources: list[SourceData]
    error_code: str | None = None
    """Why the call failed (``max_uses_exceeded``, ``too_many_requests``, ``unavailable``…)."""


class CitationData(EventData):
    """The text being streamed cites a source."""

    url: str | None = None
    title: str | None = None
    cited_text: str = ""


class UsageData(EventData):
    """Token usage of one request, by kind, as the API reported it."""

    input_tokens: int
    """Input after the last cache breakpoint (uncached)."""
    output_tokens: int
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    web_search_requests: int = 0
    """Searches the API's web search tool ran for the request."""
    web_fetch_requests: int = 0
    """Pages the API's web fetch tool read for the request."""
    one_hour_cache_writes: int = 0
    """How many of ``cache_creation_input_tokens`` were 1-hour entries (priced higher than
    5-minute ones): a part of that count, not added to it."""


class TurnEndData(EventData):
    """A turn closed for good."""

    turn: int
    result: RunResult


class RunEndData(EventData):
    """The turn task stopped; ``paused`` means the turn can be resumed."""

    result: RunResult
    pause_reason: Annotated[Literal["budget"] | None, Field(exclude_if=lambda v: v is None)] = None
    """``budget`` when a budget paused the turn (absent for a person's pause)."""


class ErrorData(EventData):
    """A method was rejected or failed."""

    code: ErrorCode
    message: str
    id: int | str | None = None


class ResyncData(EventData):
    """A ``subscribe`` could not be answered with the events missed: fetch ``get_status`` and
    ``get_history``, then follow the live events this connection gets."""

    reason: Literal["restarted", "too_old"]
    """``restarted``: the id is of an earlier start of the pod (its ``epoch`` differs);
    ``too_old``: the events after it are no longer kept (the replay buffer's bounds)."""
    epoch: str
    """The pod's epoch now: the part before the ``-`` of every id it sends until it restarts."""


class AlertData(EventData):
    """Something a person should see: a warning or an error that did not stop the pod."""

    level: Literal["info", "warn", "error"]
    source: str
    message: str
    timestamp_ms: int


class SystemNoteData(EventData):
    """A system message was committed to history (file body, note, interrupt marker)."""

    text: str
    origin: str
    seq: int | None = None
    """The committed item's ``seq`` (absent on deltas): lets a client skip what history showed."""
