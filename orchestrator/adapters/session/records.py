"""What a session file holds: the header and the record types, one JSON line each."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from orchestrator.core.history import Item, SystemMessage
from orchestrator.core.rewind import RewindRestore as RewindRestore  # the plan's, re-exported
from orchestrator.core.segments import FileRefSegment, Segment

SESSION_VERSION = 1

ITEM_LINE_PREFIX = b'{"type": "item", "item": '
"""How every ``item`` line starts; the rest of the line is the item's JSON and a closing
brace (the writer makes them so, and the loader reads them fast for it)."""


class _RecordModel(BaseModel):
    """The base of the session file's records: each builds its validator when first used (a
    pod that never reads a session back, or never writes a kind, never pays for it)."""

    model_config = ConfigDict(defer_build=True)


class SessionHeader(_RecordModel):
    """First line of a session file."""

    model_config = ConfigDict(extra="allow")

    type: Literal["session"] = "session"
    version: int = SESSION_VERSION
    pod: str
    workspace: str
    created_ms: int


class ItemRecord(_RecordModel):
    """A committed history item."""

    type: Literal["item"] = "item"
    item: dict[str, Any]


class TurnEndRecord(_RecordModel):
    """A turn closed for good."""

    type: Literal["turn_end"] = "turn_end"
    turn: int
    result: str


class PruneRecord(_RecordModel):
    """Requests from now on send only summaries for tool results of turns before ``before_turn``."""

    type: Literal["prune"] = "prune"
    before_turn: int
    prunable_tokens: int = 0


class ToolStartRecord(_RecordModel):
    """A tool call with side effects is about to start (written and synced before it does).

    On load, a start without a result means the pod died while the call ran: the call is
    closed with a result that says so, and Resume never runs it again.
    """

    type: Literal["tool_start"] = "tool_start"
    call_id: str
    name: str
    started_ms: int
    spool: str | None = None
    """File (beside the session) that the call's output is copied to while it runs."""


class ToolNotStartedRecord(_RecordModel):
    """A call whose ``tool_start`` was written did not start after all: the turn was
    interrupted while that record was being synced, before the tool ran.

    On load it cancels the start before it, so the call is unanswered like any call that never
    started (Resume runs it), as it is in the pod that wrote it; a later ``tool_start`` of the
    same call (that Resume) counts again.
    """

    type: Literal["tool_not_started"] = "tool_not_started"
    call_id: str


class TitleRecord(_RecordModel):
    """A title a person gave the session (the latest one counts)."""

    type: Literal["title"] = "title"
    title: str


class CheckpointRecord(_RecordModel):
    """The workspace was snapshotted (``id``) before the item numbered ``seq`` was committed:
    at the start of a turn (``seq`` is its user message) or before a round that changes files.
    """

    type: Literal["checkpoint"] = "checkpoint"
    id: str
    seq: int
    turn: int
    reason: Literal["turn", "round"] = "turn"
    skipped: list[str] = Field(default_factory=list)
    """Files past the size cap, not in the snapshot (not restorable)."""
    touched_only: bool = False
    """The workspace was over the snapshot budget: only the files the pod's tools touched."""


class RewindRecord(_RecordModel):
    """A rewind to just before the user message ``to_seq``.

    Written twice: ``intent`` (synced before any file is touched) and ``done`` once the
    workspace is restored. A loaded ``intent`` without its ``done`` is replayed (restoring is
    idempotent), so a crash mid-restore never leaves a mix of old and new files.
    """

    type: Literal["rewind"] = "rewind"
    phase: Literal["intent", "done"]
    to_seq: int
    restore: RewindRestore
    checkpoint: str | None = None
    """The snapshot the workspace goes back to (``code`` and ``both``)."""
    before: str | None = None
    """A snapshot of the workspace as it was just before the rewind (so it can be undone)."""


class ChildRecord(_RecordModel):
    """A ``task`` call's child pod, written and synced before the child starts.

    It links the call to the child's own session file, so a parent that died and came back
    resumes the same child (one child session, never two) instead of starting another.
    """

    type: Literal["child"] = "child"
    call_id: str
    name: str
    """The child's pod name."""
    session: str
    """The child's session file (absolute)."""
    workspace: str
    """Where the child works: the parent's workspace, or a worktree of its own."""
    isolation: Literal["shared", "worktree"] = "shared"
    agent: str | None = None
    started_ms: int


JobEnd = Literal["exited", "killed", "shutdown", "crash", "failed"]
"""How a background job ended: by itself, by ``job_kill`` / ``kill_job``, with the pod's
shutdown, with a pod that died (reported at the next start), or it never started."""


class JobRecord(_RecordModel):
    """A background job (``bash`` with ``background: true``) started or ended.

    ``start`` is written and synced before the process starts; ``end`` once it is over. A
    loaded ``start`` without its ``end`` means the pod died while the job ran (the job died
    with it): the next start tells the model and a person, then writes the ``end``.
    """

    type: Literal["job"] = "job"
    phase: Literal["start", "end"]
    id: str
    """``j1``, ``j2``, …: never reused within a session."""
    command: str = ""
    call_id: str = ""
    """The ``bash`` call that started it."""
    spool: str | None = None
    """The file (in the session's ``.jobs`` folder) its output is copied to."""
    started_ms: int = 0
    ended_ms: int | None = None
    how: JobEnd | None = None
    """(``end``) how it ended."""
    exit_code: int | None = None
    """(``end``) its exit code (negative: killed by that signal); None when unknown."""
    output_bytes: int = 0
    """(``end``) how much it printed, including what the spool cap dropped."""


class HookRunRecord(_RecordModel):
    """One hook command's run, as a :class:`HookRecord` keeps it."""

    command: str
    outcome: Literal["ok", "failed", "timeout", "interrupted"]
    code: int | None = None
    ms: int = 0
    detail: str = ""


class HookRecord(_RecordModel):
    """The hooks of one event ran (``[hooks]``), and what they decided.

    A ``PreToolUse`` denial is written and synced before the call's result: a pod that dies
    in between closes the call with the denial at the next start, so Resume never runs a call
    a hook blocked. A later ``PreToolUse`` record of the same call that does not deny (the
    hooks asked again on Resume, or a denial interrupted before the pod acted on it) undoes
    that.
    """

    type: Literal["hook"] = "hook"
    event: str
    call_id: str | None = None
    """The tool call it was about (``PreToolUse``, ``PostToolUse``)."""
    decision: Literal["allow", "ask", "deny", "block", "none"] = "none"
    """``allow`` / ``ask`` / ``deny`` a call; ``block``: refuse a prompt, go on after a turn's
    end, feedback on a result."""
    reason: str = ""
    updated_input: dict[str, Any] | None = None
    """The input the call ran with instead of the model's (this pod's tool's words)."""
    runs: list[HookRunRecord] = Field(default_factory=list)
    at_ms: int = 0


class HeldCommand(_RecordModel):
    """The custom command a held prompt invokes: what its turn needs again after a restart
    or a load (docs/commands.md)."""

    name: str
    path: str | None = None
    """The file it comes from (named in alerts)."""
    grants: list[str] = Field(default_factory=list)
    """Its ``allowed-tools``, allowed until the turn ends: granted again when a pod takes the
    held prompt back. Empty for a workspace's command, which grants nothing."""
    model: str | None = None
    """Its ``model`` as written (``opus``, an id); None: the pod's model."""
    decided: bool = False
    """``model`` was checked (listed, priced) as the turn started, and is now the id the turn
    runs on, or None for the pod's own: a restart does not decide (or alert) again."""


class HeldPromptRecord(_RecordModel):
    """A prompt held while its ``UserPromptSubmit`` hooks decide (``held``, synced before
    they run), and its end (``done``: committed, refused or dropped).

    A pod that stops in between comes back with the turn paused and the prompt still held:
    Resume asks the hooks again. A ``held`` followed by the prompt's own user message is done
    too (the pod died between the commit and the ``done``), so it is never committed twice.
    """

    type: Literal["held_prompt"] = "held_prompt"
    phase: Literal["held", "done"]
    turn: int
    message: dict[str, Any] | None = None
    """(``held``) the user message, as a history item's JSON."""
    attach: list[dict[str, Any]] = Field(default_factory=list)
    """(``held``) the items committed right after it (attached files), as items' JSON."""
    preread: list[dict[str, Any]] = Field(default_factory=list)
    """(``held``) the ``@`` refs the turn reads first (``synthetic_read``), as segments' JSON."""
    steps: list[dict[str, Any]] = Field(default_factory=list)
    """(``held``) what a custom command's expansion waits for (its ``!`` lines' runs, an MCP
    prompt), each with its state: written again before each starts and after it is done, so
    a restart runs only those never started (docs/commands.md)."""
    command: HeldCommand | None = None
    """(``held``) the custom command it invokes (its grants and model for the turn)."""
    snapshot: CheckpointRecord | None = None
    """(``held``) the workspace's snapshot from before the command's ``!`` lines ran; recorded
    as the turn's checkpoint, with the user message's ``seq``, when the prompt is committed."""


class GrantRecord(_RecordModel):
    """A person answered "always" (``approve`` with ``scope: "session"``): calls like this one
    run without asking for the rest of the session, so across an unload, a crash and a
    ``--continue`` too (a fork starts without)."""

    type: Literal["grant"] = "grant"
    tool: str
    command: str | None = None
    """The exact command line allowed (a tool with a ``command``); None: the whole tool."""
    call_id: str = ""
    """The call whose approval granted it."""
    at_ms: int = 0

    def arguments(self) -> dict[str, Any]:
        """Arguments of a call like the approved one, as ``Policy.grant`` takes them."""
        return {} if self.command is None else {"command": self.command}


class ModeRecord(_RecordModel):
    """The pod's permission mode changed (``set_mode``, an approved plan): the latest one
    counts on load, while the pod is started with the configured mode it names (a pod
    started with another ``--permission-mode`` since takes that one)."""

    type: Literal["mode"] = "mode"
    mode: str
    before_plan: str = "default"
    """The mode ``plan`` was entered from (an approved plan goes back to it)."""
    configured: str = "default"
    """The configured mode when it was chosen."""
    source: str = ""
    """What changed it (``set_mode``, ``plan approved``)."""
    at_ms: int = 0


class FallbackRecord(_RecordModel):
    """A request went to the fallback model (``fallback_model``): the rest of turn ``turn``
    stays on it, across an unload, a crash and a restart too (the next turn tries the pod's
    own model again). Each message it answered names it (``model``), so its cost is counted
    at its prices however the session is loaded, forked or rewound."""

    type: Literal["fallback"] = "fallback"
    turn: int
    model: str
    """The fallback model."""
    from_model: str
    """The model whose request failed."""
    cause: str
    """Which ``fallback_on`` cause (``overloaded``, ``server_error``, ``not_found``)."""
    error: str = ""
    """What the failed request said, for people reading the file."""
    at_ms: int = 0


class TodoEntry(_RecordModel):
    """One item of a :class:`TodosRecord`."""

    content: str
    status: Literal["pending", "in_progress", "completed"]
    active_form: str | None = None


class TodosRecord(_RecordModel):
    """The model wrote its todo list (``todo_write``): the whole list, the latest counts.

    Written and synced before the call's result is committed, so a pod that dies in between
    comes back with this list and closes the call with the result it would have had. ``seq``
    is the number of the next history item when it was written: a rewind to before user
    message ``to_seq`` keeps the records with ``seq <= to_seq`` (:mod:`orchestrator.core.todos`).
    """

    type: Literal["todos"] = "todos"
    seq: int
    call_id: str = ""
    """The ``todo_write`` call (empty: a fork's copy)."""
    todos: list[TodoEntry] = Field(default_factory=list)
    at_ms: int = 0


class HeldNote(_RecordModel):
    """A note that waited for the next round boundary (:class:`orchestrator.core.notes.NoteQueue`)."""

    note: SystemMessage
    repeats: int = 1
    """How many times it arrived (repeats of the latest note are folded into it)."""


class HeldPrompt(_RecordModel):
    """A prompt held while its ``UserPromptSubmit`` hooks run (not committed yet)."""

    segments: list[Segment]
    text: str
    """What the model reads as the user message."""
    attach: list[Item] = Field(default_factory=list)
    """Items committed right after it (file bodies, images), in order."""
    preread: list[FileRefSegment] = Field(default_factory=list)
    """Refs read inside the turn once it is committed."""
    request_id: str | None = None
    """The ``run``'s client request id (see ``UserMessage.request_id``)."""
    steps: list[dict[str, Any]] = Field(default_factory=list)
    """What a custom command's expansion still waits for (see ``HeldPromptRecord.steps``)."""
    command: HeldCommand | None = None
    """The custom command it invokes (see ``HeldPromptRecord.command``)."""
    snapshot: CheckpointRecord | None = None
    """The snapshot from before its ``!`` lines (see ``HeldPromptRecord.snapshot``)."""


class UnloadRecord(_RecordModel):
    """The pod was unloaded (closed without a shutdown), and what it held only in memory then.

    Written and synced as the session's last record before it is closed. The next load puts
    it back while it is still the pod's latest state: an item, a ``turn_end`` or a ``rewind``
    after it means a pod loaded it since and went on (a crash after that loses only what a
    crash always lost).
    """

    type: Literal["unload"] = "unload"
    at_ms: int
    turn: int = 0
    """The pod's turn number then (a paused turn's may have no item yet: its prompt held)."""
    paused: bool = False
    """Its turn was open (paused): the load starts it paused, even with no item of it."""
    notes: list[HeldNote] = Field(default_factory=list)
    """``notify`` / ``pod_event`` notes queued for the paused turn."""
    preread: list[FileRefSegment] = Field(default_factory=list)
    """``@`` refs the paused turn still has to read."""
    prompt: HeldPrompt | None = None
    """The paused turn's prompt, when its ``UserPromptSubmit`` hooks had not passed it."""
    prompt_seq: int | None = None
    """The paused turn's user message, when its workspace snapshot was not taken yet."""
    session_context: list[SystemMessage] = Field(default_factory=list)
    """What finished ``SessionStart`` hooks added, waiting for the next turn."""
    job_notes: list[SystemMessage] = Field(default_factory=list)
    """Background jobs that ended since the model last heard, to be told at the next turn."""
    touched: list[str] = Field(default_factory=list)
    """Files the pod's tools wrote (snapshots of a workspace over budget hold only these)."""
    hook_pins: dict[str, dict[str, str | None]] = Field(default_factory=dict)
    """Per ``sandbox = false`` hook command: the workspace files it runs and their
    fingerprints from the pod's start (docs/hooks.md). A load keeps them: a file changed while
    the pod was unloaded is still refused."""


class FenceRecord(_RecordModel):
    """A host took the pod over at ``epoch`` (``orchestrator.adapters.session.fencing``): a record with
    a lower epoch after this line was written by a host that had lost the pod, and is skipped.
    """

    type: Literal["fence"] = "fence"
    epoch: int
    host: str = ""
    """Which host claimed it (for people reading the file)."""
    at_ms: int = 0


class BudgetRecord(_RecordModel):
    """The pod's budgets changed (``set_budget``): the latest counts on load while the pod is
    started with the configured budgets it names (new ones given at a start win)."""

    type: Literal["budget"] = "budget"
    budget_usd: Annotated[float, Field(ge=0)] | None = None
    turn_budget_usd: Annotated[float, Field(ge=0)] | None = None
    configured: tuple[float | None, float | None] = (None, None)
    """The config's ``budget_usd`` and ``turn_budget_usd`` when they were changed."""
    at_ms: int = 0


class SpendRecord(_RecordModel):
    """Tokens the pod's key spent outside the conversation's own requests (an MCP server's
    sampling request), or dollars a child pod spent (``cost_usd``): kept so the session's
    usage, cost and budgets survive a reload."""

    type: Literal["spend"] = "spend"
    turn: int
    source: str
    """What spent them (``sampling:<server>``)."""
    usage: dict[str, Annotated[int, Field(ge=0)]]
    """Tokens by kind, as ``TokenUsage``'s fields (a negative count is a bad line, not a
    credit against the session's cost)."""
    cost_usd: Annotated[float | None, Field(ge=0, exclude_if=lambda v: v is None)] = None
    """Dollars spent, when the spender priced it (a child pod, by its own model's prices)."""
    at_ms: int = 0


Record = Annotated[
    ItemRecord
    | TurnEndRecord
    | PruneRecord
    | ToolStartRecord
    | ToolNotStartedRecord
    | TitleRecord
    | CheckpointRecord
    | RewindRecord
    | ChildRecord
    | JobRecord
    | HookRecord
    | HeldPromptRecord
    | GrantRecord
    | ModeRecord
    | FallbackRecord
    | UnloadRecord
    | FenceRecord
    | SpendRecord
    | BudgetRecord
    | TodosRecord,
    Field(discriminator="type"),
]
RECORD: TypeAdapter[Record] = TypeAdapter(Record, config=ConfigDict(defer_build=True))
"""Built on the first session read back (a new pod never reads one)."""
