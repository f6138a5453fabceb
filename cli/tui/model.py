"""UI-free state of the chat UI: the conversation, the status line, notices and key decisions.

Everything here is plain data built from typed protocol events and ``get_history`` items, so
the behaviour of the UI can be tested without a terminal; the Textual widgets only draw it.
:func:`decide` is the whole status × key table of ``docs/tui-keybindings.md``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal, Protocol, TypeAlias

from pydantic import ValidationError

from cli.tui.input import segment_text
from orchestrator.client import PodEvent
from orchestrator.history import (
    OMITTED_THINKING,
    REDACTED_THINKING,
    AssistantMessage,
    Compaction,
    Item,
    RedactedThinkingBlock,
    SystemMessage,
    TextBlock,
    ThinkingBlock,
    ToolResult,
    ToolUseBlock,
    UserMessage,
    item_from_json,
)
from orchestrator.protocol import (
    AlertData,
    ApprovalRequestData,
    ApprovalResolvedData,
    ChildData,
    CompactionData,
    HistoryData,
    JobData,
    RunEndData,
    ShutdownData,
    StatusData,
    SystemNoteData,
    TextData,
    ThinkingData,
    ToolCallArgsDeltaData,
    ToolCallDoneData,
    ToolCallStartData,
    ToolOutputDeltaData,
    ToolResultData,
    TurnEndData,
    UsageData,
    UserMessageData,
)
from orchestrator.segments import Segment

NOT_KEPT = "interrupted · not kept in history"
"""How text or a tool call that was streamed but never committed is marked."""

LIVE_OUTPUT_KEEP = 32 * 1024
"""Characters of a running tool's live output kept for its card (the result has it all)."""

ALERT_TTL_S = 20.0
"""How long the status line shows the last alert; the conversation keeps every alert."""


# -- conversation ---------------------------------------------------------------------------


@dataclass
class UserEntry:
    """A committed user message with its segments."""

    segments: list[Segment]


@dataclass
class AssistantEntry:
    """Assistant text; ``streaming`` while deltas arrive, ``interrupted`` if never committed."""

    text: str = ""
    streaming: bool = False
    interrupted: bool = False


@dataclass
class ThinkingEntry:
    """Assistant thinking text."""

    text: str = ""


@dataclass
class ToolEntry:
    """One tool call, what it printed while it ran, and, once it arrived, its result."""

    id: str
    name: str
    arguments: dict[str, Any] | None = None
    args_json: str = ""
    output: str = ""
    """The tail of the live output (``tool_output_delta``) while the tool runs."""
    summary: str | None = None
    content: str | None = None
    is_error: bool = False
    synthetic: bool = False
    child: ChildData | None = None
    """A ``task`` call's child pod, as its last ``child`` event showed it."""

    @property
    def running(self) -> bool:
        """True until the result (or the mark that none will come) arrived."""
        return self.summary is None

    @property
    def title(self) -> str:
        """Name, arguments and summary on one line (the card's title)."""
        args = self.arguments if self.arguments is not None else _loose_json(self.args_json)
        parts = [f"⚙ {self.name}({_short_args(args)})"]
        if self.summary is not None:
            parts.append(f"→ {self.summary.splitlines()[0] if self.summary else '(empty)'}")
        elif self.child is not None:
            doing = f", {self.child.tool}" if self.child.tool else ""
            parts.append(f"— child {self.child.name}: {self.child.state}{doing} …")
        else:
            parts.append("…")
        if self.is_error:
            parts.append("[error]")
        if self.synthetic:
            parts.append("[synthetic]")
        return " ".join(parts)

    @property
    def body(self) -> str:
        """What the card shows when expanded."""
        lines: list[str] = []
        args = self.arguments if self.arguments is not None else _loose_json(self.args_json)
        if args:
            lines.append(json.dumps(args, ensure_ascii=False, indent=2))
        if self.summary is None:
            lines.append(self.output or "(no result yet)")
            return "\n".join(lines)
        lines.append(self.summary)
        if self.content:
            lines.append(self.content)
        elif self.content is None:
            lines.append("(content pruned or not kept)")
        return "\n".join(lines)

    def live_tail(self, lines: int = 3) -> str:
        """The last lines a running tool printed, shown under its title until the result."""
        if not self.running or not self.output:
            return ""
        return "\n".join(self.output.rstrip("\n").splitlines()[-lines:])


@dataclass
class NoteEntry:
    """A system message committed to history (file body, notification, interrupt marker)."""

    text: str
    origin: str = "note"


class _Compacted(Protocol):
    """What a compaction says about itself, as a history item or as the live event."""

    @property
    def first_seq(self) -> int: ...
    @property
    def last_seq(self) -> int: ...
    @property
    def tokens_before(self) -> int: ...
    @property
    def tokens_after(self) -> int: ...
    @property
    def trigger(self) -> str: ...
    @property
    def summary(self) -> str: ...


class _Answered(Protocol):
    """A tool call's result, as a history item or as the live event."""

    @property
    def summary(self) -> str: ...
    @property
    def content(self) -> str | None: ...
    @property
    def is_error(self) -> bool: ...
    @property
    def synthetic(self) -> bool: ...


def compaction_note(done: _Compacted) -> NoteEntry:
    """A compaction as a card: what it covered and saved, then the summary the model reads."""
    head = (
        f"Compacted items {done.first_seq}-{done.last_seq} ({done.trigger}): "
        f"about {_k(done.tokens_before)} → {_k(done.tokens_after)} tokens of context"
    )
    return NoteEntry(text=f"{head}\n{done.summary}", origin="compaction")


@dataclass
class AlertEntry:
    """A warning or error from the pod that did not stop it."""

    level: str
    source: str
    message: str


@dataclass
class InfoEntry:
    """A line from the UI itself (greeting, connection changes, the answer to a command)."""

    text: str


APPROVAL_KEYS = "y once · a always · n deny"


@dataclass
class ApprovalEntry:
    """A tool call waiting for the user's approval, and then how it was answered."""

    call_id: str
    tool: str
    summary: str
    reason: str
    diff: str | None = None
    decision: str = "waiting"
    """``waiting``, ``approved``, ``denied`` or ``withdrawn``."""
    pod: str | None = None
    """The child pod that asks (relayed by this pod), if not this pod itself."""

    @property
    def title(self) -> str:
        """The card's one line."""
        where = f" (child {self.pod})" if self.pod else ""
        if self.decision == "waiting":
            return f"⚠ allow {self.summary}{where}?  {APPROVAL_KEYS}"
        return f"✓ {self.summary}{where}: {self.decision}"

    @property
    def body(self) -> str:
        """The diff of an edit, else the arguments' summary, and why it asked."""
        return f"{self.diff or self.summary}\n({self.reason})"


Entry: TypeAlias = (
    UserEntry
    | AssistantEntry
    | ThinkingEntry
    | ToolEntry
    | NoteEntry
    | AlertEntry
    | InfoEntry
    | ApprovalEntry
)


@dataclass(frozen=True)
class Change:
    """What an event did to the conversation: ``added``, ``updated`` or ``appended`` text."""

    kind: Literal["added", "updated", "appended"]
    index: int
    text: str = ""


def _loose_json(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text) if text else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _short_args(args: dict[str, Any] | None, limit: int = 48) -> str:
    if not args:
        return ""
    parts = []
    for key, value in args.items():
        shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        parts.append(f"{key}={shown}")
    text = ", ".join(parts).replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- status line ------------------------------------------------------------------------------


@dataclass
class PodView:
    """The pod's status as the status line shows it."""

    name: str = ""
    model: str = ""
    provider: str = ""
    workspace: str = ""
    status: str = "connecting"
    state: str = ""
    turn: int = 0
    context_percent: int | None = None
    cost_usd: float | None = None
    """What the session cost so far; None for a model the price table does not know."""
    input_tokens: int = 0
    output_tokens: int = 0
    last_alert: str = ""
    alert_at: float = 0.0
    connected: bool = False
    children: dict[str, ChildData] = field(default_factory=dict)
    """Live child pods of ``task`` calls, by call id."""
    jobs: list[JobData] = field(default_factory=list)
    """The pod's background jobs, as the last status listed them."""
    run_sent: bool = False
    """A ``run`` (or ``resume``) went out and the pod has not said it runs yet: the keys act
    as while running (a Ctrl-C right after Enter pauses that turn, it does not arm quit)."""

    def update(self, data: StatusData) -> None:
        """Take a ``status`` event (broadcast or reply)."""
        self.connected = True
        if data.status != self.status or data.status == "running":
            self.run_sent = False  # the pod took it (running), or it ended or was refused
        self.status = data.status
        self.state = data.state
        self.name = data.name or self.name
        self.model = data.model or self.model
        self.provider = data.provider or self.provider
        self.workspace = data.workspace or self.workspace
        self.turn = data.turn
        if data.context is not None:
            self.context_percent = data.context.percent
        self.cost_usd = data.cost_usd
        self.children = {child.call_id: child for child in data.children}
        if data.usage:
            # Input counts every kind the model read: uncached, cache writes, cache reads.
            self.input_tokens = sum(n for k, n in data.usage.items() if k.endswith("input_tokens"))
            self.output_tokens = data.usage.get("output_tokens", self.output_tokens)
        self.jobs = list(data.jobs)

    @property
    def key_status(self) -> str:
        """The status the keys act on: the pod's (``running`` once a run was sent), or
        ``disconnected``."""
        if not self.connected:
            return "disconnected"
        if self.run_sent and self.status in ("idle", "paused"):
            return "running"
        return self.status

    @property
    def state_label(self) -> str:
        """Idle / Running / Paused (with its hint) / Stopped / Disconnected."""
        if not self.connected:
            return "Connecting…" if self.status == "connecting" else "Disconnected"
        if self.status == "paused":
            return "Paused — Enter to resume, type to start new turn"
        if self.state == "awaiting_approval":
            return f"Awaiting approval — {APPROVAL_KEYS}"
        return self.status.capitalize()

    def alert(self, message: str, now: float) -> None:
        """Show an alert's first line on the status line for :data:`ALERT_TTL_S`."""
        self.last_alert = message.splitlines()[0] if message else ""
        self.alert_at = now

    def alert_expires(self) -> float | None:
        """When the status line's alert goes away, if one is shown."""
        return self.alert_at + ALERT_TTL_S if self.last_alert else None

    def text(self, now: float | None = None) -> str:
        """The status line as plain text; it wraps rather than overflowing 80 columns."""
        parts = [p for p in (self.name, self.model) if p]
        if self.provider == "scripted":
            parts.append("offline (scripted provider)")
        parts.append(self.state_label)
        parts.append(f"{_k(self.input_tokens)}↑ {_k(self.output_tokens)}↓ tokens")
        if self.context_percent is not None:
            parts.append(f"context {self.context_percent}%")
        if self.cost_usd is not None:
            parts.append(f"${self.cost_usd:.2f}" if self.cost_usd >= 1 else f"${self.cost_usd:.4f}")
        if self.children:
            n = len(self.children)
            parts.append(f"{n} child pod{'s' if n != 1 else ''} (/children)")
        line = " · ".join(parts)
        running = [job for job in self.jobs if job.state == "running"]
        if running:
            line += "\n" + jobs_text(running)
        expires = self.alert_expires()
        if expires is not None and (now is None or now < expires):
            line += f"\n⚠ {self.last_alert}"
        return line


JOBS_NAMED = 3
"""Running jobs the status line names; the rest are counted."""


def jobs_text(running: list[JobData]) -> str:
    """``⚙ 2 background jobs: j1 npm run dev · j2 make`` (names a few, shortened)."""
    from orchestrator.jobs.report import short_command

    count = "1 background job" if len(running) == 1 else f"{len(running)} background jobs"
    named = [f"{job.id} {short_command(job.command)[:30]}" for job in running[:JOBS_NAMED]]
    more = f" · +{len(running) - JOBS_NAMED} more" if len(running) > JOBS_NAMED else ""
    return f"⚙ {count}: {' · '.join(named)}{more} (pod jobs)"


def _k(n: int) -> str:
    return f"{n / 1000:.1f}k" if n >= 10_000 else str(n)


# -- the conversation model -------------------------------------------------------------------


class ChatModel:
    """The conversation and status of one attached UI, fed by history and events."""

    def __init__(self) -> None:
        self.entries: list[Entry] = []
        self.pod = PodView()
        self.now = 0.0
        """The UI's clock at the event being applied (the app sets it)."""
        self._stream: int | None = None
        self._unconfirmed: list[int] = []
        self._streamed_calls: list[int] = []
        self._tools: dict[str, int] = {}
        self._approvals: dict[str, int] = {}
        self.replayed_seq = 0
        """The last history item drawn by replay; committed events up to it are skipped."""

    # -- history replay --------------------------------------------------------------------

    def load_history(self, history: HistoryData) -> None:
        """Replace the conversation with committed history (the ``history`` reply)."""
        self.entries = []
        self._stream = None
        self._unconfirmed = []
        self._streamed_calls = []
        self._tools = {}
        if history.greeting:
            self.entries.append(InfoEntry(history.greeting))
        for raw in history.items:
            try:
                item = item_from_json(raw)
            except ValidationError:
                # A newer pod's kind of item: say so rather than drop it unseen.
                self.entries.append(InfoEntry(f"(an item of kind {raw.get('kind')!r} not shown)"))
                continue
            self._add_item(item)
        for alert in history.alerts:  # raised at the pod's start-up, before we could listen
            self._alert(alert)
        self.replayed_seq = max((int(raw.get("seq", 0)) for raw in history.items), default=0)

    def _add_item(self, item: Item) -> None:
        match item:
            case UserMessage(segments=segments):
                self.entries.append(UserEntry(list(segments)))
            case AssistantMessage(blocks=blocks, synthetic=synthetic):
                for block in blocks:
                    match block:
                        case TextBlock(text=text):
                            self.entries.append(AssistantEntry(text=text))
                        case ThinkingBlock(thinking=thinking):
                            self.entries.append(
                                ThinkingEntry(text=thinking.strip() or OMITTED_THINKING)
                            )
                        case RedactedThinkingBlock():
                            self.entries.append(ThinkingEntry(text=REDACTED_THINKING))
                        case ToolUseBlock(id=call_id, name=name, input=arguments):
                            self._tools[call_id] = len(self.entries)
                            self.entries.append(
                                ToolEntry(
                                    id=call_id,
                                    name=name,
                                    arguments=dict(arguments),
                                    synthetic=synthetic,
                                )
                            )
            case ToolResult():
                self._result(item.call_id, item)
            case SystemMessage(text=text, origin=origin):
                self.entries.append(NoteEntry(text=text, origin=origin))
            case Compaction():
                self.entries.append(compaction_note(item))

    def _result(self, call_id: str, result: _Answered) -> Change:
        index = self._tools.get(call_id)
        if index is None:
            # A result whose call we never saw (e.g. attached mid-turn): draw it alone.
            index = len(self.entries)
            self._tools[call_id] = index
            self.entries.append(ToolEntry(id=call_id, name="tool"))
            kind: Literal["added", "updated"] = "added"
        else:
            kind = "updated"
        entry = self.entries[index]
        assert isinstance(entry, ToolEntry)
        entry.summary = result.summary
        entry.content = result.content
        entry.output = ""
        entry.is_error = result.is_error
        entry.synthetic = entry.synthetic or result.synthetic
        return Change(kind, index)

    # -- live events -------------------------------------------------------------------------

    def apply(self, event: PodEvent) -> list[Change]:
        """Apply one broadcast event; returns what changed in the conversation."""
        seq = getattr(event.payload, "seq", None)
        if isinstance(seq, int) and seq <= self.replayed_seq:
            # Committed before the history reply was made: the replay already drew it.
            return []
        match event.event, event.payload:
            case _, StatusData() as status:
                self.pod.update(status)
            case _, UsageData() as used:
                self.pod.input_tokens += (
                    used.input_tokens
                    + used.cache_creation_input_tokens
                    + used.cache_read_input_tokens
                )
                self.pod.output_tokens += used.output_tokens
            case _, UserMessageData(segments=segments):
                return [self._add(UserEntry(list(segments)))]
            case "text_delta", TextData(text=text):
                return self._text_delta(text)
            case "text_done", TextData(text=text):
                return self._text_done(text)
            case _, ThinkingData(text=text):
                return self._thinking(text)
            case _, ToolCallStartData(id=call_id, name=name):
                return self._tool_call_start(call_id, name)
            case _, ToolCallArgsDeltaData(id=call_id) as delta:
                return self._tool_args(call_id, delta.json_)
            case _, ToolOutputDeltaData(id=call_id, text=text):
                return self._tool_output(call_id, text)
            case _, ToolCallDoneData(id=call_id, name=name, arguments=arguments):
                return self._tool_call_done(call_id, name, arguments)
            case _, ToolResultData() as result:
                return [self._result(result.id, result)]
            case _, SystemNoteData(text=text, origin=origin):
                return [self._add(NoteEntry(text=text, origin=origin))]
            case _, CompactionData() as done:
                return [self._add(compaction_note(done))]
            case _, ApprovalRequestData() as request:
                return self.adopt_approvals([request])
            case _, ChildData() as child:
                return self._child(child)
            case _, ApprovalResolvedData(id=call_id, decision=decision):
                index = self._approvals.get(call_id)
                if index is None:
                    return []
                entry = self.entries[index]
                assert isinstance(entry, ApprovalEntry)
                entry.decision = decision
                return [Change("updated", index)]
            case _, AlertData() as alert:
                return [self._alert(alert)]
            case _, TurnEndData() | RunEndData():
                # Whatever streamed and was not confirmed by now was never committed: on a
                # cancel the pod sends turn_end first, so this is where it gets its mark.
                return self._end_stream()
            case _, ShutdownData():
                changes = self._end_stream()
                self.pod.status = "stopped"
                changes.append(self._add(InfoEntry("The pod has shut down.")))
                return changes
        return []  # turn_start, replies and events this UI does not know draw nothing

    def adopt_approvals(self, requests: list[ApprovalRequestData]) -> list[Change]:
        """Cards for approval requests not drawn yet (live, or waiting when we attached)."""
        changes: list[Change] = []
        for request in requests:
            index = self._approvals.get(request.id)
            if index is not None and self.entries[index].decision == "waiting":  # type: ignore[union-attr]
                continue
            entry = ApprovalEntry(
                call_id=request.id,
                tool=request.tool,
                summary=request.summary,
                reason=request.reason,
                diff=request.diff,
                pod=request.pod,
            )
            changes.append(self._add(entry))
            self._approvals[request.id] = changes[-1].index
        return changes

    def waiting_approvals(self) -> list[ApprovalEntry]:
        """Requests still waiting for an answer, oldest first."""
        return [
            entry
            for entry in self.entries
            if isinstance(entry, ApprovalEntry) and entry.decision == "waiting"
        ]

    def _add(self, entry: Entry) -> Change:
        self.entries.append(entry)
        return Change("added", len(self.entries) - 1)

    def _end_stream(self) -> list[Change]:
        """Streamed text and calls not confirmed by their commit were never kept: mark them."""
        self._stream = None
        changes = []
        for index in self._unconfirmed:
            entry = self.entries[index]
            assert isinstance(entry, AssistantEntry)
            entry.streaming = False
            entry.interrupted = True
            changes.append(Change("updated", index))
        self._unconfirmed = []
        for index in self._streamed_calls:
            tool = self.entries[index]
            assert isinstance(tool, ToolEntry)
            if tool.summary is None:
                tool.summary = NOT_KEPT
                changes.append(Change("updated", index))
        self._streamed_calls = []
        return changes

    def _text_delta(self, delta: str) -> list[Change]:
        if self._stream is None:
            self._stream = len(self.entries)
            self._unconfirmed.append(self._stream)
            return [self._add(AssistantEntry(text=delta, streaming=True))]
        entry = self.entries[self._stream]
        assert isinstance(entry, AssistantEntry)
        entry.text += delta
        return [Change("appended", self._stream, delta)]

    def _text_done(self, text: str) -> list[Change]:
        if not self._unconfirmed:
            return [self._add(AssistantEntry(text=text))]
        index = self._unconfirmed.pop(0)
        if index == self._stream:
            self._stream = None
        entry = self.entries[index]
        assert isinstance(entry, AssistantEntry)
        changed = entry.text != text
        entry.text = text
        entry.streaming = False
        return [Change("updated", index, "replace" if changed else "")]

    def _thinking(self, text: str) -> list[Change]:
        last = self.entries[-1] if self.entries else None
        if isinstance(last, ThinkingEntry):
            last.text += text
            return [Change("updated", len(self.entries) - 1)]
        return [self._add(ThinkingEntry(text=text))]

    def _tool(self, call_id: str, name: str) -> tuple[ToolEntry, Change]:
        index = self._tools.get(call_id)
        if index is None:
            self._tools[call_id] = len(self.entries)
            entry = ToolEntry(id=call_id, name=name)
            return entry, self._add(entry)
        found = self.entries[index]
        assert isinstance(found, ToolEntry)
        return found, Change("updated", index)

    def _child(self, child: ChildData) -> list[Change]:
        """A child pod changed: the status line's count, and its ``task`` card."""
        if child.state == "exited":
            self.pod.children.pop(child.call_id, None)
        else:
            self.pod.children[child.call_id] = child
        index = self._tools.get(child.call_id)
        if index is None:
            return []
        entry = self.entries[index]
        assert isinstance(entry, ToolEntry)
        entry.child = child
        return [Change("updated", index)]

    def _tool_call_start(self, call_id: str, name: str) -> list[Change]:
        # Text after this call belongs to a new block; the streamed one awaits its text_done.
        self._stream = None
        self._tools.pop(call_id, None)
        change = self._tool(call_id, name)[1]
        self._streamed_calls.append(change.index)
        return [change]

    def _tool_args(self, call_id: str, fragment: str) -> list[Change]:
        if call_id not in self._tools:
            return []
        tool, change = self._tool(call_id, "")
        tool.args_json += fragment
        return [change]

    def _tool_output(self, call_id: str, text: str) -> list[Change]:
        if call_id not in self._tools:
            return []  # output of a call this UI never saw start: its result will show
        tool, change = self._tool(call_id, "")
        tool.output = (tool.output + text)[-LIVE_OUTPUT_KEEP:]
        return [change]

    def _tool_call_done(self, call_id: str, name: str, arguments: dict[str, Any]) -> list[Change]:
        tool, change = self._tool(call_id, name)
        tool.arguments = dict(arguments)
        if change.index in self._streamed_calls:
            self._streamed_calls.remove(change.index)  # committed
        return [change]

    def _alert(self, alert: AlertData) -> Change:
        self.pod.alert(alert.message, self.now)
        return self._add(AlertEntry(level=alert.level, source=alert.source, message=alert.message))

    def disconnected(self) -> list[Change]:
        """The connection ended (EOF)."""
        self.pod.connected = False
        self.pod.status = "disconnected"
        return self._end_stream()

    def info(self, text: str) -> Change:
        """Add a line from the UI itself."""
        return self._add(InfoEntry(text))

    def card_indices(self) -> list[int]:
        """The entries drawn as expandable cards (tool calls and system messages), in order."""
        return [i for i, e in enumerate(self.entries) if isinstance(e, ToolEntry | NoteEntry)]

    def user_prompts(self) -> list[list[Segment]]:
        """The segments of every user message shown, oldest first (for Up/Down recall)."""
        return [e.segments for e in self.entries if isinstance(e, UserEntry)]

    # -- comparisons ------------------------------------------------------------------------

    def transcript(self) -> list[str]:
        """A plain-text digest of the entries (for tests and debugging)."""
        out: list[str] = []
        for entry in self.entries:
            if isinstance(entry, UserEntry):
                out.append("user: " + "".join(segment_text(s) for s in entry.segments))
            elif isinstance(entry, AssistantEntry):
                mark = f" [{NOT_KEPT}]" if entry.interrupted else ""
                out.append("assistant: " + entry.text + mark)
            elif isinstance(entry, ThinkingEntry):
                out.append("thinking: " + entry.text)
            elif isinstance(entry, ToolEntry):
                out.append("tool: " + entry.title)
            elif isinstance(entry, NoteEntry):
                out.append(f"note[{entry.origin}]: {entry.text}")
            elif isinstance(entry, AlertEntry):
                out.append(f"alert[{entry.level}]: {entry.message}")
            elif isinstance(entry, ApprovalEntry):
                out.append(f"approval[{entry.decision}]: {entry.summary}")
            else:
                out.append("info: " + entry.text)
        return out


# -- notices ------------------------------------------------------------------------------------

NoticeLevel: TypeAlias = Literal["info", "warn", "error"]

NOTICE_TTL_S = 6.0
"""How long an answer to a key stays on the notice line when nothing replaces it sooner."""

DOUBLE_PRESS_S = 3.0
"""The second Ctrl-C (quit) or Ctrl-D (shutdown while running) must come within this window."""


@dataclass(frozen=True)
class Notice:
    """One line above the editor, true for a while: ``ttl`` seconds, or while the status holds.

    A notice about the pod's state (``Nothing to cancel: the pod is idle``) stops being true
    when the state changes; one about a key window (``press Ctrl-C again``) when the window
    closes. ``ttl=None`` keeps it until the status changes.
    """

    text: str
    level: NoticeLevel = "info"
    ttl: float | None = NOTICE_TTL_S
    while_status: bool = True


@dataclass
class NoticeBoard:
    """The notice on screen, with when and in which status it was shown."""

    notice: Notice | None = None
    shown_at: float = 0.0
    shown_in: str = ""

    def show(self, notice: Notice | None, *, status: str, now: float) -> None:
        """Replace the notice (None clears it)."""
        self.notice, self.shown_at, self.shown_in = notice, now, status

    def current(self, *, status: str, now: float) -> Notice | None:
        """The notice still true at ``now`` in ``status``; a stale one is dropped."""
        notice = self.notice
        if notice is None:
            return None
        expired = notice.ttl is not None and now >= self.shown_at + notice.ttl
        if expired or (notice.while_status and status != self.shown_in):
            self.notice = None
        return self.notice

    def expires(self) -> float | None:
        """When the current notice runs out, if it has a time limit."""
        if self.notice is None or self.notice.ttl is None:
            return None
        return self.shown_at + self.notice.ttl


# -- keys -----------------------------------------------------------------------------------------


class Key(StrEnum):
    """The keys whose meaning depends on the pod's status."""

    INTERRUPT = "ctrl+c"
    CANCEL = "ctrl+x"
    SHUTDOWN = "ctrl+d"
    SUBMIT = "enter"


QUIT_WARNING = "Press Ctrl-C again to quit; the pod keeps running"
SHUTDOWN_WARNING = "A turn is running: press Ctrl-D again to shut the pod down"
KEPT_INPUT = "A turn is running: your input is kept. Ctrl-C pauses, then Enter sends it."


@dataclass(frozen=True)
class Decision:
    """What one key press does: a method to send, a notice, leaving the UI, a press window."""

    send: Literal["pause", "cancel", "shutdown", "run", "resume"] | None = None
    notice: Notice | None = None
    exit: Literal["detached", "shutdown"] | None = None
    arm: bool = False
    """Open this key's double-press window (a second press within it acts)."""
    keep_input: bool = True
    """False when the editor's text is sent and leaves the editor."""


def decide(key: Key, status: str, *, repeated: bool = False, blank: bool = True) -> Decision:
    """The status × key table: ``repeated`` says the key's window is open, ``blank`` the input.

    ``status`` is ``idle``, ``running``, ``paused``, ``stopped``, ``disconnected`` or
    ``connecting``.
    """
    gone = status in ("disconnected", "stopped")
    at_rest = status in ("idle", "paused")
    if key is Key.INTERRUPT:
        if gone:
            return Decision(exit="detached")
        if status == "running":
            return Decision(send="pause", notice=Notice("Pausing…", ttl=None))
        if repeated:
            return Decision(exit="detached")
        return Decision(arm=True, notice=Notice(QUIT_WARNING, "warn", DOUBLE_PRESS_S, False))
    if key is Key.SHUTDOWN:
        if gone:
            return Decision(exit="shutdown")
        if status == "running" and not repeated:
            return Decision(arm=True, notice=Notice(SHUTDOWN_WARNING, "warn", DOUBLE_PRESS_S))
        return Decision(send="shutdown", notice=Notice("Shutting the pod down…", ttl=None))
    if key is Key.CANCEL:
        if status == "running":
            return Decision(send="cancel", notice=Notice("Cancelling the turn…", ttl=None))
        return Decision(notice=Notice(f"Nothing to cancel: the pod is {status}", "error"))
    # Enter
    if status == "running":
        return Decision() if blank else Decision(notice=Notice(KEPT_INPUT, "warn", ttl=None))
    if not at_rest:
        return Decision(notice=Notice(f"Cannot send: the pod is {status}", "error"))
    if blank:
        return Decision(send="resume") if status == "paused" else Decision()
    return Decision(send="run", keep_input=False)


# -- tool cards -------------------------------------------------------------------------------------


ApprovalAnswer = Literal["once", "session", "deny"]


def approval_key(key: str, *, waiting: bool, blank: bool) -> ApprovalAnswer | None:
    """What ``y``/``a``/``n`` mean: an answer while a request waits and the editor is empty,
    else nothing (the key is typed as usual)."""
    if not (waiting and blank):
        return None
    return {"y": "once", "a": "session", "n": "deny"}.get(key)  # type: ignore[return-value]


def step_card(cards: list[int], selected: int | None, step: int) -> int | None:
    """Move the card selection ``step`` cards (negative: up); None selects the newest card.

    The selection stays within the list: past the oldest or the newest it stops there.
    """
    if not cards:
        return None
    if selected is None or selected not in cards:
        return cards[-1]
    position = min(max(cards.index(selected) + step, 0), len(cards) - 1)
    return cards[position]
