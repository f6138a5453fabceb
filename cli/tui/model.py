"""The chat model: the conversation and the pod's status of one attached UI, kept UI-free.

:class:`ChatModel` turns typed protocol events and ``get_history`` items into the
conversation's entries (:mod:`cli.tui.entries`) and the status line's view
(:mod:`cli.tui.pod_view`), so the behaviour of the UI can be tested without a terminal; the
Textual widgets only draw it. What keys do is :mod:`cli.tui.keys`, the notice line
:mod:`cli.tui.notices`.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

from pydantic import ValidationError

from cli.tui.entries import (
    NOT_KEPT,
    AlertEntry,
    ApprovalEntry,
    AssistantEntry,
    Change,
    ElicitationEntry,
    Entry,
    InfoEntry,
    NoteEntry,
    ThinkingEntry,
    ToolEntry,
    UserEntry,
    compaction_note,
)
from cli.tui.input import segment_text
from cli.tui.pod_view import PodView
from orchestrator.core.history import (
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
from orchestrator.core.segments import Segment
from orchestrator.protocol import (
    AlertData,
    ApprovalRequestData,
    ApprovalResolvedData,
    ChildData,
    CompactionData,
    ElicitationRequestData,
    ElicitationResolvedData,
    HistoryData,
    RunEndData,
    ShutdownData,
    StatusData,
    SystemNoteData,
    TextData,
    ThinkingData,
    TodosData,
    ToolCallArgsDeltaData,
    ToolCallDoneData,
    ToolCallStartData,
    ToolOutputDeltaData,
    ToolResultData,
    TurnEndData,
    UsageData,
    UserMessageData,
)
from orchestrator.serving.client import PodEvent

LIVE_OUTPUT_KEEP = 32 * 1024
"""Characters of a running tool's live output kept for its card (the result has it all)."""


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
        self._inputs: dict[str, int] = {}
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
        # Cards are drawn anew below the replay (adopt_*): old indices would point elsewhere.
        self._approvals = {}
        self._inputs = {}
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
            case _, TodosData(todos=todos):
                self.pod.todos = list(todos)
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
            case _, ElicitationRequestData() as asked:
                return self.adopt_elicitations([asked])
            case _, ElicitationResolvedData(id=input_id, action=action):
                index = self._inputs.get(input_id)
                if index is None:
                    return []
                entry = self.entries[index]
                assert isinstance(entry, ElicitationEntry)
                entry.action = action
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

    def adopt_elicitations(self, requests: list[ElicitationRequestData]) -> list[Change]:
        """Cards for requests for input not drawn yet (live, or waiting when we attached)."""
        changes: list[Change] = []
        for request in requests:
            known = self.elicitation(request.id)
            if known is not None and known[1].waiting:
                continue
            changes.append(self._add(ElicitationEntry.of(request)))
            self._inputs[request.id] = changes[-1].index
        return changes

    def waiting_elicitations(self) -> list[ElicitationEntry]:
        """Requests for input still waiting for an answer, oldest first."""
        return [e for e in self.entries if isinstance(e, ElicitationEntry) and e.waiting]

    def elicitation(self, input_id: str) -> tuple[int, ElicitationEntry] | None:
        """A request for input's entry and where it is, by the request's id."""
        index = self._inputs.get(input_id)
        if index is None:
            return None
        entry = self.entries[index]
        assert isinstance(entry, ElicitationEntry)
        return index, entry

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
        self.pod.alert(alert.message, self.now, alert.level)
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
            elif isinstance(entry, ElicitationEntry):
                out.append(f"input[{entry.action}]: {entry.title}")
            else:
                out.append("info: " + entry.text)
        return out
