"""Pod to client: event names, their data models, and encoding and decoding one line."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
)

from orchestrator.core.segments import Segment

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
    "not_awaiting_approval",
    "not_awaiting_input",
    "internal",
    "forbidden",
    "duplicate",
]
RunResult = Literal["finished", "paused", "cancelled", "limit_reached", "errored"]
TurnPhase = Literal["session_start", "prompt_submit", "preread", "snapshot"]
"""Where a turn stands before (or while waiting on) its first work: ``SessionStart`` hooks'
output awaited, ``UserPromptSubmit`` hooks deciding the prompt, ``@`` files being pre-read,
or the turn's workspace snapshot awaited."""


class _Data(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ContextData(_Data):
    """How full the model's context window is."""

    used: int
    """Input tokens of the last request (or the estimate of the next, before any request)."""
    window: int
    """The model's ``max_input_tokens`` (learned from the Models API, or configured)."""
    percent: int
    compact_at: int
    """The percentage at which the pod compacts on its own."""


class StatusData(_Data):
    """The pod's coarse status, its precise machine state and what it runs on."""

    status: Literal["idle", "running", "paused", "stopped"]
    state: str
    phase: TurnPhase | None = None
    """The turn's start phase while it is in one (see :data:`TurnPhase`); null outside them.
    A change of phase alone sends no ``status``: ``get_status`` shows it."""
    name: str = ""
    model: str = ""
    provider: str = ""
    workspace: str = ""
    session: str = ""
    """The session file the pod writes (its stem is the name ``--session`` takes)."""
    turn: int = 0
    usage: dict[str, int] = Field(default_factory=dict)
    """The session's tokens by kind (input, cache writes, cache reads, output), all turns."""
    turn_usage: dict[str, int] = Field(default_factory=dict)
    """The current (or last) turn's tokens by kind."""
    context: ContextData | None = None
    thinking: str = ""
    """What the requests ask for in thinking (``adaptive``, ``budget 16000``, ``off``...), or
    why the model refuses the setting; empty until the first turn asks the model."""
    sandbox: str = ""
    """Where ``bash`` commands run, in words: ``on · network off``, ``off``, or
    ``unavailable (<why>): …`` with what that means for commands (docs/sandbox.md)."""
    cost_usd: float | None = None
    """What the session's requests cost, from the price table; None for an unpriced model."""
    approvals: list[ApprovalRequestData] = Field(default_factory=list)
    """Tool calls waiting for approval now (for a client that attaches)."""
    elicitations: list[ElicitationRequestData] = Field(default_factory=list)
    """Requests for input of MCP servers waiting for a person now (for a client that
    attaches)."""
    mcp: list[McpServerData] = Field(default_factory=list)
    """The pod's MCP servers, as they are now."""
    children: list[ChildData] = Field(default_factory=list)
    """Child pods of running or paused ``task`` calls (docs/subpods.md)."""
    jobs: list[JobData] = Field(default_factory=list)
    """The pod's background jobs (``bash`` with ``background: true``): running ones, and
    those that ended while the pod ran (the latest few)."""
    hooks: list[HookData] = Field(default_factory=list)
    """The hook commands configured (``[hooks]``, docs/hooks.md)."""
    config_warnings: list[str] = Field(default_factory=list)
    """What loading the pod's config ignored, one line each (a grant the workspace's
    ``.pod/config.toml`` may not give): every client says it, not only the one that started
    the pod."""
    id: int | str | None = None


class ChildData(_Data):
    """One child pod of a ``task`` call, as the parent's ``status`` shows it."""

    call_id: str
    """The parent's ``task`` call that runs it."""
    name: str
    """The child's pod name (``pod attach`` it on ``socket``)."""
    state: str
    """Its machine state (``requesting``, ``paused``, …); ``queued`` while it waits for a slot,
    ``starting``, ``exited`` once its process ended."""
    tool: str | None = None
    """The tool it runs now."""
    tokens: int = 0
    agent: str | None = None
    session: str
    socket: str
    tail: str = ""
    """The end of what it said or printed last."""


class JobData(_Data):
    """One background job of the pod (docs/jobs.md)."""

    id: str
    """``j1``, ``j2``, …: what ``kill_job`` and the job tools take."""
    command: str
    state: Literal["running", "exited", "killed"]
    exit_code: int | None = None
    """Once it ended: its exit code (negative: killed by that signal); None when unknown."""
    started_ms: int
    ended_ms: int | None = None
    output_bytes: int = 0
    """What it printed so far (past the spool cap too)."""


class HookData(_Data):
    """One configured hook command."""

    event: str
    matcher: str = ""
    command: str
    timeout_s: float
    on_failure: str
    sandboxed: bool
    """Runs inside the commands' sandbox (when the sandbox is on)."""


class McpServerData(_Data):
    """One MCP server of a running pod."""

    name: str
    status: str
    """``starting``, ``running``, ``failed: <why>`` or ``stopped``."""
    tools: list[str] = Field(default_factory=list)
    """The server's tools as the model sees them (``mcp__<server>__<tool>``)."""
    offered: list[str] = Field(default_factory=list)
    """Those of them offered to the model (the others are filtered, denied or collide)."""
    not_offered: dict[str, str] = Field(default_factory=dict)
    """Why a tool of the server's is not offered, where the pod can say: a task-only tool, a
    bad schema or name, a name another tool has (``allow``/``deny`` and permissions aside)."""
    restarts: int = 0
    """Times it was started again after it stopped by itself or stuck after a cancel."""
    survivors: list[str] = Field(default_factory=list)
    """Processes of the server (or that it started) still running after the supervisor meant
    to end them was killed: ``"PID COMMAND"`` each."""


class ApprovalRequestData(_Data):
    """A tool call waits for a person's approval before it runs."""

    id: str
    """The tool call's id: answer with ``approve`` / ``deny`` naming it."""
    tool: str
    kind: Literal["read", "edit", "execute", "other"]
    arguments: dict[str, Any]
    summary: str
    """What it would do, in one line (the command, the file)."""
    reason: str
    """Why it asks (the mode or the rule)."""
    diff: str | None = None
    """For an edit: the unified diff it would apply."""
    pod: str | None = None
    """The child pod (sub-pod) whose call this is, relayed to the parent's clients; None:
    this pod's own call."""
    held: list[str] | None = None
    """Set when the call already ran in the sandbox and created or changed these protected
    paths (workspace-relative): they are held aside, the previous state is back, and
    ``approve`` puts them back (``scope`` is taken as ``once``), ``deny`` leaves them undone."""


class ApprovalResolvedData(_Data):
    """A waiting approval is over: approved, denied, or withdrawn by an interrupt."""

    id: str
    decision: Literal["approved", "denied", "withdrawn"]


class ElicitationRequestData(_Data):
    """An MCP server, during a call of one of its tools, asks a person for input: a form to
    fill in, or a URL to open. Answer with ``answer_elicitation`` naming ``id``."""

    id: str
    server: str
    """The MCP server that asks (its name in ``[mcp.servers]``)."""
    message: str
    """What it says to the person, in its own words."""
    mode: Literal["form", "url"] = "form"
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")
    """For a form: the flat JSON Schema of what it asks (an object of strings, numbers,
    booleans and enums, with ``required`` and defaults; see docs/mcp.md)."""
    url: str | None = None
    """For ``url``: the page the person should open (nothing is filled in here)."""
    tool: str | None = None
    """The tool call it came during, as the model calls it (``mcp__<server>__<tool>``)."""
    pod: str | None = None
    """The child pod that asks, relayed to the parent's clients; None: this pod."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class ElicitationResolvedData(_Data):
    """A waiting request for input is over: answered (how), or withdrawn by an interrupt."""

    id: str
    action: Literal["accept", "decline", "cancel", "withdrawn"]


class CompactionData(_Data):
    """A compaction was committed: what it summarised and what it saved."""

    seq: int
    first_seq: int
    last_seq: int
    summary: str
    tokens_before: int
    tokens_after: int
    files: list[str] = Field(default_factory=list)
    trigger: Literal["auto", "manual", "recovery"] = "auto"


class RewindFilesData(_Data):
    """What restoring the workspace changes (or changed): paths relative to it."""

    restored: list[str] = Field(default_factory=list)
    """Changed or deleted since the prompt: written back as they were."""
    deleted: list[str] = Field(default_factory=list)
    """Created since the prompt: removed."""
    left: dict[str, str] = Field(default_factory=dict)
    """Not restorable, left as they are, with why (over the size cap, ignored, never seen)."""
    insertions: int = 0
    deletions: int = 0


class RewindData(_Data):
    """A rewind to just before user message ``to`` (``rewind_preview``: what it would do;
    ``rewound``: what it did)."""

    to: int
    restore: Literal["both", "conversation", "code"]
    prompt: str
    """The rewound prompt's text, offered back for editing."""
    dropped: int = 0
    """Items of the conversation that go (or went)."""
    files: RewindFilesData | None = None
    """The workspace's changes; None when only the conversation rewinds."""
    id: Any = None


class ForkedData(_Data):
    """A new session was made from this one's conversation."""

    session: str
    """Its name, as ``pod sessions ls`` and ``--session`` take it."""
    path: str
    workspace: str
    """The workspace the fork belongs to: its session is listed with that folder's sessions
    (the forking pod's own, unless ``fork`` named another)."""
    at: int | None = None
    """It holds what came before this user message (None: all of it)."""
    items: int = 0
    id: Any = None


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


# StatusData names models defined after it: complete it now, not on the first status the pod
# builds (a schema build of tens of milliseconds while a client waits).
StatusData.model_rebuild()

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
    "compaction": CompactionData,
    "rewind_preview": RewindData,
    "rewound": RewindData,
    "forked": ForkedData,
    "approval_request": ApprovalRequestData,
    "approval_resolved": ApprovalResolvedData,
    "elicitation_request": ElicitationRequestData,
    "elicitation_resolved": ElicitationResolvedData,
    "usage": UsageData,
    "turn_end": TurnEndData,
    "run_end": RunEndData,
    "error": ErrorData,
    "alert": AlertData,
    "history": HistoryData,
    "file_completions": FileCompletionsData,
    "shutdown": ShutdownData,
    "child": ChildData,
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
    "compaction",
    "rewind_preview",
    "rewound",
    "forked",
    "approval_request",
    "approval_resolved",
    "elicitation_request",
    "elicitation_resolved",
    "usage",
    "turn_end",
    "run_end",
    "error",
    "alert",
    "history",
    "file_completions",
    "shutdown",
    "child",
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
