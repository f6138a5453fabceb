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

from cli.terminal_text import visible
from cli.tui.entries import (
    NOT_KEPT,
    AlertEntry,
    ApprovalEntry,
    AssistantEntry,
    Change,
    ElicitationEntry,
    InfoEntry,
    NoteEntry,
    ThinkingEntry,
    ToolEntry,
    UserEntry,
    compaction_note,
    note_entry,
)
from cli.tui.pod_view import PodView
from cli.tui.streamed_text import StreamedText, transcript
from cli.tui.web_entries import CitedText, ServerToolEntry, marked
from orchestrator.core.history import (
    OMITTED_THINKING,
    REDACTED_THINKING,
    AssistantMessage,
    Compaction,
    Item,
    RedactedThinkingBlock,
    ServerToolResultBlock,
    ServerToolUseBlock,
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
    ServerToolCallData,
    ServerToolResultData,
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


class ChatModel(StreamedText):
    """The conversation and status of one attached UI, fed by history and events."""

    def __init__(self) -> None:
        super().__init__()
        self.pod = PodView()
        self.now = 0.0
        """The UI's clock at the event being applied (the app sets it)."""
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
        self._cited, self._joining = CitedText(), None
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
                joined: AssistantEntry | None = None  # consecutive text blocks read as one
                for block in blocks:
                    if not isinstance(block, TextBlock):
                        joined = None
                    match block:
                        case TextBlock(text=text):
                            text = marked(text, self._cited.block_markers(item.seq, block))
                            if joined is not None:
                                joined.text += text
                            else:
                                joined = AssistantEntry(text=text)
                                self.entries.append(joined)
                        case ServerToolUseBlock(id=call_id, name=name, input=asked):
                            self._tools[call_id] = len(self.entries)
                            self.entries.append(ServerToolEntry(call_id, name, dict(asked)))
                        case ServerToolResultBlock():
                            self._server_entry(block.tool_use_id, block.type)[0].take_block(block)
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
                if (sources := self._cited.sources()) is not None:
                    self.entries.append(sources)
            case ToolResult():
                self._result(item.call_id, item)
            case SystemMessage(text=text, origin=origin):
                self.entries.append(note_entry(text, origin, item.seq))
            case Compaction():
                self.entries.append(compaction_note(item, todos=item.open_todos))

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
                self.pod.web_searches += used.web_search_requests
                # A complete response is committed whole: its server calls are kept.
                streamed = self._streamed_calls
                self._streamed_calls = [
                    i for i in streamed if isinstance(self.entries[i], ToolEntry)
                ]
            case _, UserMessageData(segments=segments):
                return [self._add(UserEntry(list(segments)))]
            case "text_delta", TextData(text=text):
                return self._text_delta(text)
            case "text_done", TextData() as done:
                return self._text_done(done)
            case _, ThinkingData(text=text):
                return self._thinking(text)
            case _, ToolCallStartData(id=call_id, name=name):
                return self._tool_call_start(call_id, name)
            case _, ServerToolCallData(id=call_id, name=name, input=asked):
                self._stream = None  # text after it is a block of its own
                self._tools[call_id] = len(self.entries)
                self._streamed_calls.append(len(self.entries))
                return [self._add(ServerToolEntry(call_id, name, dict(asked)))]
            case _, ServerToolResultData(id=call_id, name=name) as result:
                card, change = self._server_entry(call_id, name)
                card.answer([(s.url, s.title) for s in result.sources], result.error_code)
                return [change]
            case _, ToolCallArgsDeltaData(id=call_id) as delta:
                return self._tool_args(call_id, delta.json_)
            case _, ToolOutputDeltaData(id=call_id, text=text):
                return self._tool_output(call_id, text)
            case _, ToolCallDoneData(id=call_id, name=name, arguments=arguments):
                return self._tool_call_done(call_id, name, arguments)
            case _, ToolResultData() as result:
                return [self._result(result.id, result)]
            case _, SystemNoteData(text=text, origin=origin, seq=seq):
                return [self._add(note_entry(text, origin, seq))]
            case _, CompactionData() as done:
                return [self._add(compaction_note(done, todos=done.todos))]
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
                plan=plan_of(request),
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
            if isinstance(tool, ServerToolEntry):
                tool.not_kept = True  # its response never completed (no usage came)
                changes.append(Change("updated", index))
                continue
            assert isinstance(tool, ToolEntry)
            if tool.summary is None:
                tool.summary = NOT_KEPT
                changes.append(Change("updated", index))
        self._streamed_calls = []
        return changes

    def _server_entry(self, call_id: str, name: str) -> tuple[ServerToolEntry, Change]:
        """The card of a server tool call (drawn alone when its start was not seen)."""
        index = self._tools.get(call_id)
        found = self.entries[index] if index is not None else None
        if isinstance(found, ServerToolEntry) and index is not None:
            return found, Change("updated", index)
        self._tools[call_id] = len(self.entries)
        entry = ServerToolEntry(call_id, name.removesuffix("_tool_result"))
        return entry, self._add(entry)

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
        cards = ToolEntry | ServerToolEntry | NoteEntry
        return [i for i, e in enumerate(self.entries) if isinstance(e, cards)]

    def user_prompts(self) -> list[list[Segment]]:
        """The segments of every user message shown, oldest first (for Up/Down recall)."""
        return [e.segments for e in self.entries if isinstance(e, UserEntry)]

    # -- comparisons ------------------------------------------------------------------------

    def transcript(self) -> list[str]:
        """A plain-text digest of the entries (for tests and debugging)."""
        return transcript(self.entries)


def plan_of(request: ApprovalRequestData) -> str | None:
    """A plan's text (``kind: "plan"``), made safe to render: control characters escaped."""
    plan = request.arguments.get("plan") if request.kind == "plan" else None
    return visible(plan) if isinstance(plan, str) else None
