"""The JSON-lines wire protocol between clients and a pod.

One JSON object per line, UTF-8. A client sends ``{"method", "params", "id"}``; the pod sends
``{"event", "data"}``. Every message has a pydantic model here, so the JSON Schema printed by
``pod protocol schema`` is the one the code enforces.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    TypeAdapter,
    ValidationError,
    model_validator,
)

from orchestrator.errors import PodRuntimeError
from orchestrator.segments import Segment, TextSegment, flatten_segments

MAX_LINE_BYTES = 8 * 1024 * 1024
"""A client line longer than this is refused with ``invalid_request`` and discarded."""


class ProtocolError(PodRuntimeError):
    """A client line that cannot be turned into a method; carries the protocol error code."""

    def __init__(self, message: str, *, code: str = "invalid_request", id: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.id = id


# -- methods (client -> pod) --------------------------------------------------------------


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NoParams(_Params):
    """Parameters of a method that takes none."""


class RunParams(_Params):
    """Submit user input: ``segments``, or ``input`` as shorthand for one text segment (never both)."""

    segments: list[Segment] = Field(default_factory=list)
    input: str | None = None
    _plain: bool = PrivateAttr(default=False)

    @property
    def plain(self) -> bool:
        """True when the client sent plain ``input``: the pod scans it for ``@`` refs."""
        return self._plain

    @model_validator(mode="after")
    def _input_or_segments(self) -> RunParams:
        # The keys are exclusive whatever their values: ``"segments": []`` or ``"input": null``
        # beside the other key is a client bug, and guessing which one it meant hides it.
        if {"input", "segments"} <= self.model_fields_set:
            raise ValueError("give either 'input' or 'segments', not both")
        if self.input is not None:
            self.segments = [TextSegment(text=self.input)]
            self.input = None
            self._plain = True
        if not self.segments:
            raise ValueError("run needs 'segments' or 'input'")
        # A blank user message maps to empty wire content, which the API rejects on every
        # later request of the session; refuse it here instead.
        if not flatten_segments(self.segments).strip():
            raise ValueError("run input is blank")
        return self


class NotifyParams(_Params):
    """A message for the model from outside the conversation (injected as a system note)."""

    message: str = Field(min_length=1, pattern=r"\S")


class PodEventParams(_Params):
    """A child pod reporting upward."""

    kind: Literal["turn_ended", "errored", "shut_down"]
    pod: str = "child"
    message: str = ""


class CompleteFilesParams(_Params):
    """Prefix completion for ``@`` file refs."""

    prefix: str = ""
    limit: int = Field(default=50, ge=1, le=1000)


MethodName = Literal[
    "run",
    "notify",
    "pod_event",
    "resume",
    "pause",
    "cancel",
    "shutdown",
    "get_history",
    "get_status",
    "complete_files",
]

PARAMS_BY_METHOD: dict[str, type[_Params]] = {
    "run": RunParams,
    "notify": NotifyParams,
    "pod_event": PodEventParams,
    "resume": NoParams,
    "pause": NoParams,
    "cancel": NoParams,
    "shutdown": NoParams,
    "get_history": NoParams,
    "get_status": NoParams,
    "complete_files": CompleteFilesParams,
}


class Request(BaseModel):
    """One client line: a method, its parameters and an optional id echoed in direct replies."""

    model_config = ConfigDict(extra="forbid")

    method: MethodName
    params: dict[str, Any] = Field(default_factory=dict)
    id: int | str | None = None


def _has_lone_surrogate(value: Any) -> bool:
    """True when any string in a parsed JSON value holds an unpaired surrogate."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def parse_request(line: bytes | str) -> tuple[Request, _Params]:
    """Parse one client line into its envelope and typed params, or raise :class:`ProtocolError`."""
    if isinstance(line, bytes):
        try:
            line = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ProtocolError(f"line is not valid UTF-8 (byte {exc.start})") from None
    try:
        raw = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ProtocolError(f"line is not JSON: {exc.msg} at column {exc.colno}") from None
    except RecursionError:
        raise ProtocolError("line is nested too deeply") from None
    if not isinstance(raw, dict):
        raise ProtocolError("a request must be a JSON object")
    if "\\ud" in line.lower() and _has_lone_surrogate(raw):
        # A lone surrogate escape parses, but no UTF-8 text (session, wire, events) can hold it.
        raise ProtocolError("line contains a lone UTF-16 surrogate (\\ud800-\\udfff escape)")
    if raw.get("params", {}) is None:
        raw["params"] = {}
    req_id = raw.get("id") if isinstance(raw.get("id"), int | str) else None
    method = raw.get("method")
    if method not in PARAMS_BY_METHOD:
        known = ", ".join(PARAMS_BY_METHOD)
        raise ProtocolError(f"unknown method {method!r}; known: {known}", id=req_id)
    try:
        request = Request.model_validate(raw)
        params = PARAMS_BY_METHOD[request.method].model_validate(request.params)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "params"
        raise ProtocolError(
            f"invalid {method} request: {where}: {first['msg']}", id=req_id
        ) from None
    return request, params


# -- events (pod -> client) ---------------------------------------------------------------

ErrorCode = Literal[
    "already_running",
    "not_running",
    "not_paused",
    "invalid_request",
    "provider_error",
    "tool_error",
    "session_write",
    "queue_full",
    "internal",
    "forbidden",
]
RunResult = Literal["finished", "paused", "cancelled", "limit_reached", "errored"]


class _Data(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StatusData(_Data):
    """The pod's coarse status, its precise machine state and what it runs on."""

    status: Literal["idle", "running", "paused", "stopped"]
    state: str
    name: str = ""
    model: str = ""
    provider: str = ""
    workspace: str = ""
    turn: int = 0
    usage: dict[str, int] = Field(default_factory=dict)
    id: int | str | None = None


class UserMessageData(_Data):
    """A user message was committed."""

    segments: list[Segment]
    seq: int | None = None
    """The committed item's ``seq`` (absent on deltas): lets a client skip what history showed."""


class TurnStartData(_Data):
    """A turn began (or resumed)."""

    turn: int
    resumed: bool = False


class TextData(_Data):
    """Assistant text, as a delta or the whole block."""

    text: str
    seq: int | None = None
    """The committed item's ``seq`` (absent on deltas): lets a client skip what history showed."""


class ThinkingData(_Data):
    """Assistant thinking text."""

    text: str


class ToolCallStartData(_Data):
    """The model began a tool call (or a synthetic Read was injected)."""

    id: str
    name: str


class ToolOutputDeltaData(_Data):
    """Output a running tool (``bash``) printed just now; the result still carries it all."""

    id: str
    text: str


class ToolCallArgsDeltaData(_Data):
    """A fragment of a tool call's JSON arguments."""

    id: str
    json_: str = Field(alias="json")

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class ToolCallDoneData(_Data):
    """A tool call's arguments are complete."""

    id: str
    name: str
    arguments: dict[str, Any]
    seq: int | None = None
    """The committed item's ``seq`` (absent on deltas): lets a client skip what history showed."""


class ToolResultData(_Data):
    """A tool call's result was committed."""

    id: str
    summary: str
    content: str | None
    is_error: bool
    synthetic: bool = False
    seq: int | None = None
    """The committed item's ``seq`` (absent on deltas): lets a client skip what history showed."""


class UsageData(_Data):
    """Token usage of one request, by kind, as the API reported it."""

    input_tokens: int
    """Input after the last cache breakpoint (uncached)."""
    output_tokens: int
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0


class TurnEndData(_Data):
    """A turn closed for good."""

    turn: int
    result: RunResult


class RunEndData(_Data):
    """The turn task stopped; ``paused`` means the turn can be resumed."""

    result: RunResult


class ErrorData(_Data):
    """A method was rejected or failed."""

    code: ErrorCode
    message: str
    id: int | str | None = None


class AlertData(_Data):
    """Something a person should see: a warning or an error that did not stop the pod."""

    level: Literal["info", "warn", "error"]
    source: str
    message: str
    timestamp_ms: int


class SystemNoteData(_Data):
    """A system message was committed to history (file body, note, interrupt marker)."""

    text: str
    origin: str
    seq: int | None = None
    """The committed item's ``seq`` (absent on deltas): lets a client skip what history showed."""


class HistoryData(_Data):
    """The whole committed history, in the session file's item format."""

    items: list[dict[str, Any]]
    greeting: str = ""
    alerts: list[AlertData] = Field(default_factory=list)
    """Alerts raised while the pod started (e.g. a torn session line), before anyone listened."""
    id: int | str | None = None


class FileCompletionsData(_Data):
    """Candidates for an ``@`` prefix."""

    prefix: str
    candidates: list[str]
    id: int | str | None = None


class ShutdownData(_Data):
    """The pod is going away."""


EVENT_DATA: dict[str, type[_Data]] = {
    "status": StatusData,
    "user_message": UserMessageData,
    "turn_start": TurnStartData,
    "text_delta": TextData,
    "text_done": TextData,
    "thinking_delta": ThinkingData,
    "tool_call_start": ToolCallStartData,
    "tool_call_args_delta": ToolCallArgsDeltaData,
    "tool_output_delta": ToolOutputDeltaData,
    "tool_call_done": ToolCallDoneData,
    "tool_result": ToolResultData,
    "system_note": SystemNoteData,
    "usage": UsageData,
    "turn_end": TurnEndData,
    "run_end": RunEndData,
    "error": ErrorData,
    "alert": AlertData,
    "history": HistoryData,
    "file_completions": FileCompletionsData,
    "shutdown": ShutdownData,
}

EventName = Literal[
    "status",
    "user_message",
    "turn_start",
    "text_delta",
    "text_done",
    "thinking_delta",
    "tool_call_start",
    "tool_call_args_delta",
    "tool_output_delta",
    "tool_call_done",
    "tool_result",
    "system_note",
    "usage",
    "turn_end",
    "run_end",
    "error",
    "alert",
    "history",
    "file_completions",
    "shutdown",
]


class Event(BaseModel):
    """One pod line: an event name and its data."""

    model_config = ConfigDict(extra="forbid")

    event: EventName
    data: dict[str, Any] = Field(default_factory=dict)


def encode_event(event: str, data: BaseModel | dict[str, Any] | None = None) -> bytes:
    """One event as a JSON line; the hot path for deltas, so it avoids revalidation."""
    if isinstance(data, BaseModel):
        payload: dict[str, Any] = data.model_dump(mode="json", by_alias=True, exclude_none=False)
        if "id" in payload and payload["id"] is None and event != "error":
            del payload["id"]
        if payload.get("seq", 0) is None:
            del payload["seq"]  # deltas carry no seq; keep them small
    else:
        payload = data or {}
    text = json.dumps({"event": event, "data": payload}, ensure_ascii=False) + "\n"
    # Text from the file system can carry surrogate escapes (undecodable names); written as a
    # JSON \\u escape it stays valid UTF-8 instead of failing the whole event.
    return text.encode("utf-8", "backslashreplace")


def decode_event(line: bytes | str) -> Event:
    """Parse and validate one pod line (used by clients and tests)."""
    event = Event.model_validate_json(line)
    EVENT_DATA[event.event].model_validate(event.data)
    return event


def protocol_schema() -> dict[str, Any]:
    """JSON Schema for every method's params and every event's data."""
    return {
        "title": "pod-orchestrator protocol",
        "request": Request.model_json_schema(),
        "methods": {name: model.model_json_schema() for name, model in PARAMS_BY_METHOD.items()},
        "events": {
            name: model.model_json_schema(by_alias=True) for name, model in EVENT_DATA.items()
        },
        "segment": TypeAdapter(Segment).json_schema(),
    }
