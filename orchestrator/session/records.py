"""What a session file holds: the header and the record types, one JSON line each."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

SESSION_VERSION = 1


class SessionHeader(BaseModel):
    """First line of a session file."""

    model_config = ConfigDict(extra="allow")

    type: Literal["session"] = "session"
    version: int = SESSION_VERSION
    pod: str
    workspace: str
    created_ms: int


class ItemRecord(BaseModel):
    """A committed history item."""

    type: Literal["item"] = "item"
    item: dict[str, Any]


class TurnEndRecord(BaseModel):
    """A turn closed for good."""

    type: Literal["turn_end"] = "turn_end"
    turn: int
    result: str


class PruneRecord(BaseModel):
    """Requests from now on send only summaries for tool results of turns before ``before_turn``."""

    type: Literal["prune"] = "prune"
    before_turn: int
    prunable_tokens: int = 0


class ToolStartRecord(BaseModel):
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


class TitleRecord(BaseModel):
    """A title a person gave the session (the latest one counts)."""

    type: Literal["title"] = "title"
    title: str


class CheckpointRecord(BaseModel):
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


RewindRestore = Literal["both", "conversation", "code"]


class RewindRecord(BaseModel):
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


class ChildRecord(BaseModel):
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


class JobRecord(BaseModel):
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


class HookRunRecord(BaseModel):
    """One hook command's run, as a :class:`HookRecord` keeps it."""

    command: str
    outcome: Literal["ok", "failed", "timeout", "interrupted"]
    code: int | None = None
    ms: int = 0
    detail: str = ""


class HookRecord(BaseModel):
    """The hooks of one event ran (``[hooks]``), and what they decided.

    A ``PreToolUse`` denial is written and synced before the call's result: a pod that dies
    in between closes the call with the denial at the next start, so Resume never runs a call
    a hook blocked.
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


class HeldPromptRecord(BaseModel):
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


Record = Annotated[
    ItemRecord
    | TurnEndRecord
    | PruneRecord
    | ToolStartRecord
    | TitleRecord
    | CheckpointRecord
    | RewindRecord
    | ChildRecord
    | JobRecord
    | HookRecord
    | HeldPromptRecord,
    Field(discriminator="type"),
]
RECORD: TypeAdapter[Record] = TypeAdapter(Record)
