"""Pod to client, the pod as it stands: its status and what it lists (children, jobs, hooks,
MCP servers, pending approvals and elicitations), compactions, rewinds, forks, the history
and file completions a client asks for, and shutdown."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field

from orchestrator.protocol.data import EventData
from orchestrator.protocol.turn_stream import AlertData

__all__ = [
    "ApprovalRequestData",
    "ApprovalResolvedData",
    "BudgetData",
    "ChildData",
    "ClientIoRequestData",
    "CompactionData",
    "ContextData",
    "ElicitationRequestData",
    "ElicitationResolvedData",
    "FileCompletionsData",
    "ForkedData",
    "HistoryData",
    "HookData",
    "JobData",
    "McpServerData",
    "ModelChoiceData",
    "ModelsData",
    "RewindData",
    "RewindFilesData",
    "ShutdownData",
    "StatusData",
    "TodoData",
    "TodosData",
    "TurnPhase",
    "WebData",
    "WebWhyData",
]

TurnPhase = Literal["session_start", "commands", "prompt_submit", "preread", "snapshot"]
"""Where a turn stands before (or while waiting on) its first work: ``SessionStart`` hooks'
output awaited, a custom command's ``!`` lines (or MCP prompt) being run, ``UserPromptSubmit``
hooks deciding the prompt, ``@`` files being pre-read, or the turn's workspace snapshot
awaited."""


class ContextData(EventData):
    """How full the model's context window is."""

    used: int
    """Input tokens of the last request (or the estimate of the next, before any request)."""
    window: int
    """The model's ``max_input_tokens`` (learned from the Models API, or configured)."""
    percent: int
    compact_at: int
    """The percentage at which the pod compacts on its own."""


class WebWhyData(EventData):
    """Why search and fetch are what they are: the model's support, the config, or the
    platform (the scripted provider runs no server tools)."""

    search: str
    fetch: str


class WebData(EventData):
    """What the pod's turn requests declare for the web (docs/web.md)."""

    search: Literal["on", "off"]
    """The API's web search tool."""
    fetch: Literal["server", "local", "off"]
    """``server``: the API's web fetch tool; ``local``: the pod's own ``web_fetch`` tool."""
    why: WebWhyData


class BudgetData(EventData):
    """The pod's budgets in dollars and what it spent against them (docs/budgets.md)."""

    budget_usd: float | None = None
    """The session's cap; null: none."""
    turn_budget_usd: float | None = None
    """One turn's cap; null: none."""
    spent_usd: float = 0.0
    """What the session's requests cost (child pods and MCP sampling included)."""
    turn_spent_usd: float = 0.0
    """What the open (or last) turn's requests cost."""


class StatusData(EventData):
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
    web: WebData | None = None
    """Web search and fetch as the requests declare them, and why; null until the first turn
    asks the model."""
    sandbox: str = ""
    """Where ``bash`` commands run, in words: ``on · network off``, ``off``, or
    ``unavailable (<why>): …`` with what that means for commands (docs/sandbox.md)."""
    cost_usd: float | None = None
    """What the session's requests cost, from the price table; None for an unpriced model."""
    budget: BudgetData | None = None
    """The budgets and the spend against them."""
    pause_reason: Literal["user", "budget"] | None = None
    """Why a paused pod is paused: ``budget`` when a cap paused the turn (``set_budget``,
    then ``resume``), ``user`` otherwise; null when not paused."""
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
    permission_mode: str = "default"
    """The permission mode now (``set_mode`` switches it; docs/permissions.md)."""
    thinking_setting: str = ""
    """The ``thinking`` setting the requests are planned from (``auto``, ``adaptive``,
    ``off`` or a budget), as configured or last set by ``set_model``."""
    effort: str = ""
    """The ``effort`` setting (empty: the model's default)."""
    pending: dict[str, str] = Field(default_factory=dict)
    """What ``set_model`` changed while a turn was open, applied when the next turn starts
    (``model``, ``thinking``, ``effort``)."""
    config_warnings: list[str] = Field(default_factory=list)
    """What loading the pod's config ignored, one line each (a grant the workspace's
    ``.pod/config.toml`` may not give): every client says it, not only the one that started
    the pod."""
    todos: list[TodoData] = Field(default_factory=list)
    """The model's todo list as it is now (``todo_write``, docs/todos.md); empty before the
    first write."""
    id: int | str | None = None


class TodoData(EventData):
    """One item of the pod's todo list (docs/todos.md). Its text is the model's: a client
    shows it as text, never as markup or terminal control."""

    content: str
    status: Literal["pending", "in_progress", "completed"]
    active_form: str | None = None
    """The item as it is being done (``Running the tests``), when the model gave one."""


class TodosData(EventData):
    """The todo list changed (a ``todo_write``, or a rewind back to an earlier list): the
    whole list as it is now."""

    todos: list[TodoData] = Field(default_factory=list)


class ChildData(EventData):
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


class JobData(EventData):
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


class HookData(EventData):
    """One configured hook command."""

    event: str
    matcher: str = ""
    command: str
    timeout_s: float
    on_failure: str
    sandboxed: bool
    """Runs inside the commands' sandbox (when the sandbox is on)."""


class McpServerData(EventData):
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


class ApprovalRequestData(EventData):
    """A tool call waits for a person's approval before it runs."""

    id: str
    """The tool call's id: answer with ``approve`` / ``deny`` naming it."""
    tool: str
    kind: Literal["read", "edit", "execute", "other", "plan"]
    """What the call is, for permissions; ``plan``: the model asks to leave plan mode with the
    plan in ``arguments.plan`` (markdown; approve names the mode to work in, docs/plan-mode.md)."""
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


class ApprovalResolvedData(EventData):
    """A waiting approval is over: approved, denied, or withdrawn by an interrupt."""

    id: str
    decision: Literal["approved", "denied", "withdrawn"]


class ElicitationRequestData(EventData):
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


class ElicitationResolvedData(EventData):
    """A waiting request for input is over: answered (how), or withdrawn by an interrupt."""

    id: str
    action: Literal["accept", "decline", "cancel", "withdrawn"]


class CompactionData(EventData):
    """A compaction was committed: what it summarised and what it saved."""

    seq: int
    first_seq: int
    last_seq: int
    summary: str
    tokens_before: int
    tokens_after: int
    files: list[str] = Field(default_factory=list)
    trigger: Literal["auto", "manual", "recovery"] = "auto"
    kept_rounds: int = 0
    """Whole tool rounds kept verbatim after the summary."""
    kept_request: bool = False
    """The latest user request is still read verbatim (kept, or carried after the summary)."""
    todos: int = 0
    """Open todo items carried verbatim after the summary."""


class RewindFilesData(EventData):
    """What restoring the workspace changes (or changed): paths relative to it."""

    restored: list[str] = Field(default_factory=list)
    """Changed or deleted since the prompt: written back as they were."""
    deleted: list[str] = Field(default_factory=list)
    """Created since the prompt: removed."""
    left: dict[str, str] = Field(default_factory=dict)
    """Not restorable, left as they are, with why (over the size cap, ignored, never seen)."""
    insertions: int = 0
    deletions: int = 0


class RewindData(EventData):
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


class ForkedData(EventData):
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


class HistoryData(EventData):
    """The whole committed history, in the session file's item format."""

    items: list[dict[str, Any]]
    greeting: str = ""
    alerts: list[AlertData] = Field(default_factory=list)
    """Alerts raised while the pod started (e.g. a torn session line), before anyone listened."""
    id: int | str | None = None


class FileCompletionsData(EventData):
    """Candidates for an ``@`` prefix."""

    prefix: str
    candidates: list[str]
    id: int | str | None = None


class ShutdownData(EventData):
    """The pod is going away."""


# StatusData names models defined after it: complete it now, not on the first status the pod
# builds (a schema build of tens of milliseconds while a client waits).
StatusData.model_rebuild()


class ModelChoiceData(EventData):
    """One model the provider offers."""

    id: str
    """What ``set_model`` takes."""
    name: str = ""
    """Its display name, when the provider gives one."""


class ModelsData(EventData):
    """The reply to ``list_models``: the models the provider lists (the current one among
    them, first when the provider does not list it), and the settings ``set_model`` takes."""

    models: list[ModelChoiceData] = Field(default_factory=list)
    current: str
    thinking_setting: str
    effort: str = ""
    reason: str = ""
    """Why the list holds only the current model (the provider could not list its models)."""
    id: int | str | None = None


class ClientIoRequestData(EventData):
    """The pod asks the client that offered the editor's files (``offer_client_io``) to read
    or write one; sent to that client only, answered with ``client_io_result``."""

    id: str
    op: Literal["read_text_file", "write_text_file", "run_command", "kill_command"]
    path: str = ""
    """An absolute path the pod's scope allowed (the files' ops)."""
    content: str | None = None
    """What to write, for ``write_text_file``."""
    call_id: str = ""
    """The tool call it is for."""
    argv: list[str] = Field(default_factory=list)
    """``run_command``: the program and its arguments, to run as they are (the pod's own
    environment filter is part of them: ``env -i NAME=value … /bin/bash -c COMMAND``)."""
    cwd: str = ""
    """``run_command``: the folder to run in (the workspace)."""
    timeout_s: float | None = None
    """``run_command``: kill it after this long and say so."""
    output_byte_limit: int | None = None
    """``run_command``: the most output to keep (its end is kept)."""
