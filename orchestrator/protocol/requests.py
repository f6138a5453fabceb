"""Client to pod: method names, their params, and parsing one client line into them."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)

from orchestrator.core.segments import Segment, TextSegment, flatten_segments
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
    model_config = ConfigDict(extra="forbid")


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


DIRECT_METHODS: Final[tuple[str, ...]] = (
    "get_history",
    "get_status",
    "complete_files",
    "fork",
    "kill_job",
    "set_mode",
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
    "set_budget": SetBudgetParams,
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
