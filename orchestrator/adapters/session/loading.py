"""Reading a session file back into history, skipping what it cannot use and saying so."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from orchestrator.adapters.session.errors import SessionError
from orchestrator.adapters.session.fencing import EPOCH_PREFIX, split_epoch
from orchestrator.adapters.session.records import (
    ITEM_LINE_PREFIX,
    RECORD,
    BudgetRecord,
    CheckpointRecord,
    ChildRecord,
    FallbackRecord,
    FenceRecord,
    GrantRecord,
    HeldPromptRecord,
    HookRecord,
    ItemRecord,
    JobRecord,
    ModeRecord,
    RewindRecord,
    SessionHeader,
    SpendRecord,
    TitleRecord,
    TodosRecord,
    ToolNotStartedRecord,
    ToolStartRecord,
    TurnEndRecord,
    UnloadRecord,
)
from orchestrator.config.regular_file import read_regular
from orchestrator.core.history import ITEM_ADAPTER, History, Item, encode_item, item_from_json
from orchestrator.core.todos import todos_before


@dataclass(frozen=True, slots=True)
class PreparedHistory:
    """A loaded session's items made ready for a pod ahead of building it (off the event
    loop): repaired, in a :class:`History`, with each item's JSON text. Valid while
    ``source`` is still the session's item list (finishing a cut-short rewind replaces it)."""

    source: list[Item]
    history: History
    texts: list[bytes]
    """Each item's JSON for the ``history`` event, in the history's order."""
    notes: list[str]
    """What the repair changed, one line each."""


@dataclass
class LoadedSession:
    """What a session file holds."""

    header: SessionHeader
    items: list[Item]
    turn_results: dict[int, str] = field(default_factory=dict)
    prune_before_turn: int = 0
    started_calls: dict[str, ToolStartRecord] = field(default_factory=dict)
    """Write-ahead records of tool calls with side effects, by call id."""
    last_write_ms: int = 0
    """When the file was last written (its mtime): the pod's last sign of life."""
    title: str | None = None
    """The latest ``title`` record; None when nobody named the session."""
    warnings: list[str] = field(default_factory=list)
    checkpoints: list[CheckpointRecord] = field(default_factory=list)
    """Snapshots of the workspace, oldest first."""
    children: dict[str, ChildRecord] = field(default_factory=dict)
    """The child pods of ``task`` calls, by call id."""
    pending_rewind: RewindRecord | None = None
    """A rewind whose ``intent`` was written but not its ``done``: to be replayed."""
    next_seq: int = 1
    """The next item number: past every item the file ever held, rewound ones included."""
    last_turn: int = 0
    """The highest turn number the file ever held (turn numbers are never reused)."""
    jobs: list[JobRecord] = field(default_factory=list)
    """Background jobs' ``start`` and ``end`` records, in file order."""
    held_prompt: HeldPromptRecord | None = None
    """A prompt whose ``UserPromptSubmit`` hooks had not decided when the pod stopped."""
    hook_denials: dict[str, str] = field(default_factory=dict)
    """Calls a ``PreToolUse`` hook denied, with the reason (closed with it if unanswered)."""
    item_json: dict[int, bytes] = field(default_factory=dict)
    """Each loaded item's JSON as its line holds it, by ``seq``: the ``history`` event carries
    the session file's item format, so a reload reuses it instead of encoding every item
    again (see :func:`encoded_items`)."""
    grants: list[GrantRecord] = field(default_factory=list)
    """"Always" answers of this session, oldest first."""
    mode: ModeRecord | None = None
    """The latest permission mode switch (None: the pod never switched)."""
    fallback: FallbackRecord | None = None
    """The latest switch to the fallback model (None: none ever); it holds for its turn."""
    budget: BudgetRecord | None = None
    """The latest change of the budgets (None: never changed)."""
    spends: list[SpendRecord] = field(default_factory=list)
    """Tokens spent outside the conversation's requests (sampling), oldest first."""
    todos: list[TodosRecord] = field(default_factory=list)
    """Every version of the todo list the conversation still holds (rewound ones dropped),
    oldest first: the last is the list now."""
    unloaded: UnloadRecord | None = None
    """What the pod held in memory when it was last unloaded, while nothing came after it."""
    epoch: int | None = None
    """The ownership epoch of the latest ``fence`` record (a fleet pod); None outside a fleet."""
    prepared: PreparedHistory | None = None
    """The history made ready on a worker thread (``open_session_async``) for the pod built
    from this session next; None until then, and once that pod took it."""

    @property
    def cut_off(self) -> bool:
        """True when the last turn never ended (crash, kill -9, or a pause)."""
        if self.held_prompt is not None:
            return True
        if self.unloaded is not None and self.unloaded.paused:
            return True  # paused when unloaded, maybe before any item of the turn
        last_turn = max((item.turn for item in self.items), default=0)
        return last_turn > 0 and last_turn not in self.turn_results


MAX_SESSION_BYTES = 1 << 30
"""A session file larger than this is refused, not read (a 30,000-turn session is ~90 MB)."""


def load_session(path: Path) -> LoadedSession:
    """Read a session file; a torn or corrupt line is skipped and reported in ``warnings``."""
    try:
        raw = read_regular(path, max_bytes=MAX_SESSION_BYTES)
    except OSError as exc:
        raise SessionError(f"cannot read session {path}: {exc.strerror}") from None
    lines = raw.split(b"\n")
    torn_tail = bool(lines) and lines[-1] != b""
    if not torn_tail:
        lines = lines[:-1]
    if not lines:
        raise SessionError(f"session {path} is empty")
    high, first = split_epoch(lines[0])
    try:
        header = SessionHeader.model_validate_json(first)
    except ValidationError:
        raise SessionError(f"{path}: line 1 is not a session header") from None
    session = LoadedSession(header=header, items=[], last_write_ms=mtime_ms(path))
    seen: set[int] = set()
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        if line.startswith(EPOCH_PREFIX):
            # A fleet pod's line (orchestrator.adapters.session.fencing): one from a host that had
            # lost the pod when it wrote is not part of the session.
            epoch, line = split_epoch(line)
            if epoch is not None:
                if high is not None and epoch < high:
                    session.warnings.append(
                        f"{path.name}:{number}: record of a superseded owner (epoch {epoch} "
                        f"< {high}) ignored"
                    )
                    continue
                high = epoch
        if line.startswith(ITEM_LINE_PREFIX) and line.endswith(b"}"):
            # The common line, parsed once, straight into its item; a line this cannot read
            # goes the general way below, which reports it exactly as it always did.
            body = line[len(ITEM_LINE_PREFIX) : -1]
            try:
                fast: Item | None = ITEM_ADAPTER.validate_json(body)
            except ValidationError:
                fast = None
            if fast is not None:
                _add_item(session, seen, fast, body, path, number)
                continue
        try:
            record = RECORD.validate_json(line)
        except ValidationError:
            last = number == len(lines)
            what = (
                "torn last line (the pod stopped mid-write)" if last and torn_tail else "bad line"
            )
            session.warnings.append(f"{path.name}:{number}: {what} ignored")
            continue
        if isinstance(record, ItemRecord):
            try:
                item = item_from_json(record.item)
            except ValidationError:
                session.warnings.append(f"{path.name}:{number}: unreadable item ignored")
                continue
            _add_item(session, seen, item, None, path, number)
            held = session.held_prompt
            if held is not None and item.kind == "user_message" and item.turn == held.turn:
                session.held_prompt = None  # committed; its "done" did not make it to disk
        elif isinstance(record, TurnEndRecord):
            session.turn_results[record.turn] = record.result
            session.unloaded = None
            if session.held_prompt is not None and session.held_prompt.turn == record.turn:
                session.held_prompt = None
        elif isinstance(record, ToolStartRecord):
            session.started_calls[record.call_id] = record
        elif isinstance(record, ToolNotStartedRecord):
            session.started_calls.pop(record.call_id, None)
        elif isinstance(record, TitleRecord):
            session.title = record.title
        elif isinstance(record, CheckpointRecord):
            session.checkpoints.append(record)
        elif isinstance(record, ChildRecord):
            session.children[record.call_id] = record
        elif isinstance(record, JobRecord):
            session.jobs.append(record)
        elif isinstance(record, HeldPromptRecord):
            session.held_prompt = record if record.phase == "held" else None
            session.last_turn = max(session.last_turn, record.turn)
        elif isinstance(record, HookRecord):
            if record.event == "PreToolUse" and record.call_id:
                if record.decision == "deny":
                    session.hook_denials[record.call_id] = record.reason
                else:  # a later verdict (the hooks asked again, or the denial withdrawn)
                    session.hook_denials.pop(record.call_id, None)
        elif isinstance(record, GrantRecord):
            session.grants.append(record)
        elif isinstance(record, ModeRecord):
            session.mode = record
        elif isinstance(record, FallbackRecord):
            session.fallback = record
        elif isinstance(record, BudgetRecord):
            session.budget = record
        elif isinstance(record, UnloadRecord):
            session.unloaded = record
        elif isinstance(record, SpendRecord):
            session.spends.append(record)
        elif isinstance(record, TodosRecord):
            session.todos.append(record)
        elif isinstance(record, FenceRecord):
            session.epoch = record.epoch
            # Every record of an older owner from here on is stale (the claim is not stamped:
            # it names its epoch itself).
            high = record.epoch if high is None else max(high, record.epoch)
        elif isinstance(record, RewindRecord):
            session.unloaded = None
            if record.phase == "intent":
                session.pending_rewind = record
                continue
            session.pending_rewind = None
            if record.restore != "code":
                rewind_loaded(session, record.to_seq)
        else:
            session.prune_before_turn = record.before_turn
    if session.unloaded is not None:
        session.last_turn = max(session.last_turn, session.unloaded.turn)
    return session


def _add_item(
    session: LoadedSession,
    seen: set[int],
    item: Item,
    body: bytes | None,
    path: Path,
    number: int,
) -> None:
    """Add the item of line ``number`` (``body``: its JSON as the line holds it), skipping a
    repeat."""
    session.unloaded = None  # the pod was loaded again and went on
    if item.seq in seen:
        session.warnings.append(f"{path.name}:{number}: duplicate item {item.seq} ignored")
        return
    seen.add(item.seq)
    session.items.append(item)
    if body is not None:
        session.item_json[item.seq] = body
    if item.seq >= session.next_seq:
        session.next_seq = item.seq + 1
    if item.turn > session.last_turn:
        session.last_turn = item.turn


def encoded_items(items: list[Item], loaded: LoadedSession) -> list[bytes]:
    """Each item's JSON for the ``history`` event: the line's own for an item loaded
    unchanged (the same object the loader made), a fresh encoding for the others (items a
    repair changed or added, and lines the fast reader did not take)."""
    by_seq = {item.seq: item for item in loaded.items}
    texts = loaded.item_json
    return [
        texts[item.seq] if by_seq.get(item.seq) is item and item.seq in texts else encode_item(item)
        for item in items
    ]


def rewind_loaded(session: LoadedSession, to_seq: int) -> None:
    """Take a loaded session's conversation back to before user message ``to_seq``: its items
    and the todo lists written since."""
    session.items = rewound(session.items, to_seq)
    session.todos = todos_before(session.todos, to_seq)


def rewound(items: list[Item], to_seq: int) -> list[Item]:
    """The conversation as it was just before item ``to_seq`` (a user message)."""
    return [item for item in items if item.seq < to_seq]


def mtime_ns(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return 0


def mtime_ms(path: Path) -> int:
    return mtime_ns(path) // 1_000_000
