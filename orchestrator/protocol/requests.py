"""Client to pod: method names, their params, and parsing one client line into them."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Annotated, Any, Final, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from orchestrator.core.segments import Segment, TextSegment, flatten_segments
from orchestrator.core.thinking import MIN_BUDGET
from orchestrator.errors import PodRuntimeError
from states import METHOD_EVENTS

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
    # Built when a method of its kind first arrives (as the event data are), not at import.
    model_config = ConfigDict(extra="forbid", defer_build=True)


class NoParams(_Params):
    """Parameters of a method that takes none."""


class RunParams(_Params):
    """Submit user input: ``segments``, or ``input`` as shorthand for one text segment (never both)."""

    segments: list[Segment] = Field(default_factory=list)
    input: str | None = None
    request_id: str | None = Field(default=None, min_length=1, max_length=200)
    """A client request id, unique across clients (a UUID): the pod keeps it on the user
    message the run commits, and answers a replay of it ``duplicate`` instead of committing
    it again (a retry after a lost connection, a fleet gateway's replay)."""

    @model_validator(mode="after")
    def _input_or_segments(self) -> RunParams:
        # The keys are exclusive whatever their values: ``"segments": []`` or ``"input": null``
        # beside the other key is a client bug, and guessing which one it meant hides it.
        if {"input", "segments"} <= self.model_fields_set:
            raise ValueError("give either 'input' or 'segments', not both")
        if self.input is not None:
            self.segments = [TextSegment(text=self.input)]
            self.input = None
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


PermissionMode = Literal["default", "accept-edits", "yolo", "read-only", "plan"]
"""A permission mode (the config's ``[permissions] mode``; a test checks they agree)."""


class ApproveParams(_Params):
    """Let a tool call that waits for approval run."""

    id: str = Field(min_length=1)
    """The tool call's id (from ``approval_request``)."""
    scope: Literal["once", "session"] = "once"
    """``session``: also allow calls like this one (the same command, or the same file tool)
    for the rest of the session (it is recorded in the session file). A plan is approved
    once whatever it says."""
    mode: PermissionMode | None = None
    """Only for a plan (``kind: "plan"``): the mode to work in once it is approved (not
    ``plan``, never wider than the configuration allows); absent: the mode before plan."""


class SetModeParams(_Params):
    """Switch the pod's permission mode; it applies from the next tool decision."""

    mode: PermissionMode
    """The new mode: the configured one or any narrower (docs/permissions.md)."""


_MODEL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@-]*")
"""A model id as the providers spell them (``claude-sonnet-4-5``, Bedrock's
``us.anthropic.claude-…:0``, Vertex's ``claude-…@2025…``): nothing a URL path or a line
could be bent with."""


class SetModelParams(_Params):
    """Change the model, the thinking setting or the effort of the requests to come: at
    once when no turn is open, else when the next turn starts (a turn's requests keep the
    settings they began with, so its thinking blocks stay valid)."""

    model: str | None = Field(default=None, min_length=1, max_length=200)
    """A model the provider lists (``list_models``); absent: unchanged."""
    thinking: Literal["auto", "adaptive", "off"] | Annotated[int, Field(ge=MIN_BUDGET)] | None = (
        None
    )
    """As the ``thinking`` config key (docs/thinking.md); absent: unchanged."""
    effort: Literal["default", "low", "medium", "high", "xhigh", "max"] | None = None
    """As the ``effort`` config key, ``default`` for the model's own; absent: unchanged."""

    @field_validator("model")
    @classmethod
    def _model_id(cls, model: str | None) -> str | None:
        if model is not None and not _MODEL_ID.fullmatch(model):
            raise ValueError(
                f"{model!r} is not a model id (letters, digits, '.', '_', ':', '@' and '-')"
            )
        return model

    @model_validator(mode="after")
    def _something(self) -> SetModelParams:
        if self.model is None and self.thinking is None and self.effort is None:
            raise ValueError("name a model, a thinking setting or an effort to change")
        return self


class OfferClientIoParams(_Params):
    """This client serves the editor's files: the pod's file tools read and write through
    it (``client_io_request``), until another client offers or this one withdraws."""

    files: bool
    """True: serve ``read_text_file`` and ``write_text_file``; false: withdraw the offer."""
    terminal: bool = False
    """True: serve ``run_command`` and ``kill_command`` (``bash`` runs there while the pod's
    sandbox is off)."""


class ClientIoResultParams(_Params):
    """The answer to a ``client_io_request``."""

    id: str = Field(min_length=1, max_length=64)
    ok: bool
    """Whether it was done (a read gives ``content``)."""
    content: str | None = Field(default=None, max_length=MAX_LINE_BYTES)
    """The file's text, for a read."""
    message: str = Field(default="", max_length=4000)
    """Why it was not done."""
    started: bool = False
    """``run_command`` not done (``ok: false``): whether it may have started (then the pod
    never runs it again itself)."""
    exit_code: int | None = None
    """``run_command``: its exit code (None: killed by a signal, or unknown)."""
    signal: str | None = Field(default=None, max_length=40)
    """``run_command``: the signal that ended it."""
    timed_out: bool = False
    """``run_command``: killed when its ``timeout_s`` ran out."""
    truncated: bool = False
    """``run_command``: ``content`` is only the end of its output."""


class SetBudgetParams(_Params):
    """Change the pod's budgets in dollars (docs/budgets.md): a key given replaces its cap,
    null removes it, a key left out keeps it. A turn the budget paused goes on with
    ``resume``."""

    budget_usd: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    """The session's cap."""
    turn_budget_usd: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    """One turn's cap."""


class DenyParams(_Params):
    """Refuse a tool call that waits for approval; the model reads why."""

    id: str = Field(min_length=1)
    message: str = Field(default="", max_length=4000)
    """What the model is told (``denied by user: <message>``)."""
    asked: bool = True
    """False when no person was asked (a client with no terminal, an editor that could not
    be reached): the model is told ``not run: nobody could be asked to approve it
    (<message>)``, not that a user denied it."""


ElicitationValue = str | int | float | bool | list[str]
"""What one field of a form holds (MCP allows no nesting)."""


class AnswerElicitationParams(_Params):
    """Answer a waiting request for input of an MCP server."""

    id: str = Field(min_length=1)
    """The request's id (from ``elicitation_request``)."""
    action: Literal["accept", "decline", "cancel"]
    """``accept``: with ``content`` (a form) or having opened the URL; ``decline``: said no;
    ``cancel``: dismissed without saying."""
    content: dict[str, ElicitationValue] | None = None
    """The form's fields by name, checked against the schema the server gave (a form the
    schema refuses is an ``invalid_request`` error, and the request keeps waiting)."""


class CompactParams(_Params):
    """Compact the history now (between turns) or at the running turn's next round boundary."""

    focus: str | None = Field(default=None, max_length=4000)
    """What the summary should pay most attention to (e.g. "the failing test")."""


class RewindParams(_Params):
    """Go back to just before a user message: the conversation, the workspace files, or both."""

    to: int | None = Field(default=None, ge=1)
    """The ``seq`` of a user message of the conversation; absent: the last one."""
    restore: Literal["both", "conversation", "code"] = "both"
    dry_run: bool = False
    """Only say what would change (a ``rewind_preview`` reply); change nothing."""


class ForkParams(_Params):
    """Start a new session from this one's conversation, up to before a user message."""

    at: int | None = Field(default=None, ge=1)
    """The ``seq`` of a user message: the fork holds what came before it; absent: everything."""
    name: str | None = Field(default=None, max_length=200)
    """A title for the new session."""
    workspace: str | None = Field(default=None, min_length=1, max_length=4096)
    """An absolute path: the folder the fork belongs to (its own copy of the workspace, as
    ``pod fork --worktree`` makes), so its session is stored and listed with that folder's;
    absent: this pod's workspace."""


class KillJobParams(_Params):
    """End a background job of the pod and everything it started."""

    id: str = Field(min_length=1, max_length=64)
    """The job's id (``j1``), as ``status.jobs`` lists it."""


EVENT_ID_RE: Final = re.compile(r"(?P<epoch>[A-Za-z0-9]{1,32})-(?P<n>0|[1-9][0-9]{0,17})")
"""An event id (``eid``) as the pod writes it, ``"<epoch>-<n>"``; ``n`` 0 means "before the
first event" (:mod:`orchestrator.serving.replay`)."""


class SubscribeParams(_Params):
    """Catch up on the events broadcast since one this client saw, then go on live."""

    after: str | None = Field(default=None, max_length=64)
    """The ``eid`` of the last event the client has; null: nothing to catch up on."""

    @field_validator("after")
    @classmethod
    def _an_event_id(cls, value: str | None) -> str | None:
        if value is not None and EVENT_ID_RE.fullmatch(value) is None:
            raise ValueError(
                "not an event id: expected '<epoch>-<n>' as the pod sent it in an event's "
                "'eid' (letters and digits, a dash, a number), or null"
            )
        return value


DIRECT_METHODS: Final[tuple[str, ...]] = (
    "get_history",
    "get_status",
    "complete_files",
    "fork",
    "kill_job",
    "set_mode",
    "list_models",
    "set_model",
    "offer_client_io",
    "client_io_result",
    "list_commands",
    "subscribe",
    "get_stats",
)
"""Methods the pod answers itself, in any state, without asking its lifecycle machine."""

METHOD_NAMES: Final[tuple[str, ...]] = (*METHOD_EVENTS, *DIRECT_METHODS)
"""Every protocol method: the machine's events (:data:`states.METHOD_EVENTS`, accepted or
refused by the machine), then the direct ones. :data:`PARAMS_BY_METHOD` holds the same
names (a test checks), in the order the docs and the ``unknown method`` error list them."""

if TYPE_CHECKING:
    MethodName = str
else:
    MethodName = Literal[METHOD_NAMES]
    """A protocol method's name (one of :data:`METHOD_NAMES`)."""

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
    "compact": CompactParams,
    "approve": ApproveParams,
    "deny": DenyParams,
    "answer_elicitation": AnswerElicitationParams,
    "rewind": RewindParams,
    "fork": ForkParams,
    "kill_job": KillJobParams,
    "set_mode": SetModeParams,
    "list_models": NoParams,
    "set_model": SetModelParams,
    "offer_client_io": OfferClientIoParams,
    "client_io_result": ClientIoResultParams,
    "list_commands": NoParams,
    "subscribe": SubscribeParams,
    "set_budget": SetBudgetParams,
    "get_stats": NoParams,
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
