"""UI-free state of the chat UI: the input's chips, the conversation and the status line.

Everything here is plain data built from protocol events and ``get_history`` items, so the
behaviour of the UI can be tested without a terminal. The Textual widgets only draw it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

CHIP_OPEN = "⟦"
CHIP_CLOSE = "⟧"
PASTE_CHIP_MIN_CHARS = 200
"""A single-line paste longer than this becomes a chip instead of inline text."""

_TOKEN_AT_END = re.compile(rf"{CHIP_OPEN}[^{CHIP_OPEN}{CHIP_CLOSE}\n]*{CHIP_CLOSE}$")
_TOKEN_AT_START = re.compile(rf"^{CHIP_OPEN}[^{CHIP_OPEN}{CHIP_CLOSE}\n]*{CHIP_CLOSE}")
_COMPLETION_QUERY = re.compile(rf"(?:^|\s)@([^\s{CHIP_OPEN}{CHIP_CLOSE}]*)$")


# -- input ----------------------------------------------------------------------------------


def should_chip_paste(text: str) -> bool:
    """A paste of more than one line or of more than 200 characters becomes a chip."""
    return len(text) > PASTE_CHIP_MIN_CHARS or len(text.rstrip("\n").splitlines()) > 1


def paste_label(paste_id: int | str, text: str) -> str:
    """How a paste is shown to people: ``Clipboard #N | X chars, Y lines``."""
    lines = max(1, len(text.splitlines()))
    return f"Clipboard #{paste_id} | {len(text)} chars, {lines} lines"


def segment_label(segment: dict[str, Any]) -> str | None:
    """The chip text of a non-text segment, or None for plain text."""
    kind = segment.get("kind")
    if kind == "text":
        return None
    if kind == "paste":
        return f"[{paste_label(segment.get('id', '?'), str(segment.get('text', '')))}]"
    if kind == "file_ref":
        return f"@{segment.get('path', '')}"
    if kind == "knowledge_ref":
        return f"@knowledge:{segment.get('slug', '')}"
    if kind == "workflow_invoke":
        return f"/{segment.get('slug', '')}"
    return f"[{kind}]"


def completion_query(line_before_cursor: str) -> str | None:
    """The ``@`` prefix being typed at the cursor, or None when no completion applies."""
    match = _COMPLETION_QUERY.search(line_before_cursor)
    return match.group(1) if match else None


@dataclass
class InputChips:
    """The chips of the input editor: placeholder tokens in the text mapped to segments.

    The editor holds plain text in which each chip is a token such as ``⟦@src/app.py⟧``;
    :meth:`segments` maps the text back to protocol segments on submit.
    """

    chips: dict[str, dict[str, Any]] = field(default_factory=dict)
    next_paste: int = 1

    def paste(self, text: str) -> str:
        """Register a paste and return its token."""
        paste_id = self.next_paste
        self.next_paste += 1
        token = f"{CHIP_OPEN}{paste_label(paste_id, text)}{CHIP_CLOSE}"
        self.chips[token] = {"kind": "paste", "id": paste_id, "text": text}
        return token

    def file_ref(self, path: str) -> str:
        """Register a file reference and return its token."""
        token = f"{CHIP_OPEN}@{path}{CHIP_CLOSE}"
        self.chips[token] = {"kind": "file_ref", "path": path}
        return token

    def knowledge_ref(self, slug: str) -> str:
        """Register a knowledge reference and return its token."""
        token = f"{CHIP_OPEN}@knowledge:{slug}{CHIP_CLOSE}"
        self.chips[token] = {"kind": "knowledge_ref", "slug": slug}
        return token

    def token_before(self, line_before_cursor: str) -> str | None:
        """The chip token that ends exactly at the cursor, if any."""
        match = _TOKEN_AT_END.search(line_before_cursor)
        if match and match.group(0) in self.chips:
            return match.group(0)
        return None

    def token_after(self, line_after_cursor: str) -> str | None:
        """The chip token that starts exactly at the cursor, if any."""
        match = _TOKEN_AT_START.match(line_after_cursor)
        if match and match.group(0) in self.chips:
            return match.group(0)
        return None

    def token_around(self, line: str, column: int) -> tuple[int, int] | None:
        """The (start, end) columns of a chip token strictly containing ``column``."""
        for token in self.chips:
            start = line.find(token)
            while start != -1:
                end = start + len(token)
                if start < column < end:
                    return start, end
                start = line.find(token, end)
        return None

    def segments(self, text: str) -> list[dict[str, Any]]:
        """The protocol segments of the editor text; unknown tokens stay literal text."""
        out: list[dict[str, Any]] = []
        pending: list[str] = []
        pos = 0
        tokens = sorted(self.chips, key=len, reverse=True)
        while pos < len(text):
            token = next((t for t in tokens if text.startswith(t, pos)), None)
            if token is None:
                pending.append(text[pos])
                pos += 1
                continue
            if pending:
                out.append({"kind": "text", "text": "".join(pending)})
                pending = []
            out.append(dict(self.chips[token]))
            pos += len(token)
        if pending:
            out.append({"kind": "text", "text": "".join(pending)})
        return out

    def clear(self) -> None:
        """Forget the chips after a submit; paste numbers keep counting up."""
        self.chips.clear()

    def saw(self, segments: list[dict[str, Any]]) -> None:
        """Number new pastes after those already in the conversation, so chips stay unique."""
        for seg in segments:
            if seg.get("kind") == "paste" and isinstance(seg.get("id"), int):
                self.next_paste = max(self.next_paste, int(seg["id"]) + 1)


def is_blank(segments: list[dict[str, Any]]) -> bool:
    """True when the segments carry nothing but whitespace."""
    for seg in segments:
        if seg.get("kind") != "text" or str(seg.get("text", "")).strip():
            return False
    return True


# -- conversation ---------------------------------------------------------------------------


@dataclass
class UserEntry:
    """A committed user message with its segments."""

    segments: list[dict[str, Any]]


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
    """One tool call and, once it arrived, its result."""

    id: str
    name: str
    arguments: dict[str, Any] | None = None
    args_json: str = ""
    summary: str | None = None
    content: str | None = None
    is_error: bool = False
    synthetic: bool = False

    @property
    def title(self) -> str:
        """Name, arguments and summary on one line (the collapsible card's title)."""
        args = self.arguments if self.arguments is not None else _loose_json(self.args_json)
        parts = [f"⚙ {self.name}({_short_args(args)})"]
        if self.summary is not None:
            parts.append(f"→ {self.summary.splitlines()[0] if self.summary else '(empty)'}")
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
        if self.summary is not None:
            lines.append(self.summary)
        if self.content:
            lines.append(self.content)
        elif self.summary is not None and self.content is None:
            lines.append("(content pruned or not kept)")
        return "\n".join(lines) or "(no result yet)"


@dataclass
class NoteEntry:
    """A system message committed to history (file body, notification, interrupt marker)."""

    text: str
    origin: str = "note"


@dataclass
class AlertEntry:
    """A warning or error from the pod that did not stop it."""

    level: str
    source: str
    message: str


@dataclass
class InfoEntry:
    """A line from the UI itself (greeting, connection changes)."""

    text: str


Entry: TypeAlias = (
    UserEntry | AssistantEntry | ThinkingEntry | ToolEntry | NoteEntry | AlertEntry | InfoEntry
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


@dataclass
class PodView:
    """The pod's status as the status line shows it."""

    name: str = ""
    model: str = ""
    provider: str = ""
    status: str = "connecting"
    turn: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    last_alert: str = ""
    connected: bool = False

    def update(self, data: dict[str, Any]) -> None:
        """Take a ``status`` event (broadcast or reply)."""
        self.connected = True
        self.status = str(data.get("status", self.status))
        self.name = str(data.get("name") or self.name)
        self.model = str(data.get("model") or self.model)
        self.provider = str(data.get("provider") or self.provider)
        self.turn = int(data.get("turn", self.turn))
        usage = data.get("usage") or {}
        if usage:
            self.input_tokens = int(usage.get("input_tokens", self.input_tokens))
            self.output_tokens = int(usage.get("output_tokens", self.output_tokens))

    @property
    def state_label(self) -> str:
        """Idle / Running / Paused (with its hint) / Stopped / Disconnected."""
        if not self.connected:
            return "Connecting…" if self.status == "connecting" else "Disconnected"
        if self.status == "paused":
            return "Paused — Enter to resume, type to start new turn"
        return self.status.capitalize()

    def text(self) -> str:
        """The status line as plain text; it wraps rather than overflowing 80 columns."""
        parts = [p for p in (self.name, self.model) if p]
        if self.provider == "scripted":
            parts.append("offline (scripted provider)")
        parts.append(self.state_label)
        parts.append(f"{_k(self.input_tokens)}↑ {_k(self.output_tokens)}↓ tokens")
        line = " · ".join(parts)
        if self.last_alert:
            line += f"\n⚠ {self.last_alert}"
        return line


def _k(n: int) -> str:
    return f"{n / 1000:.1f}k" if n >= 10_000 else str(n)


class ChatModel:
    """The conversation and status of one attached UI, fed by history and events."""

    def __init__(self) -> None:
        self.entries: list[Entry] = []
        self.pod = PodView()
        self._stream: int | None = None
        self._unconfirmed: list[int] = []
        self._streamed_calls: list[int] = []
        self._tools: dict[str, int] = {}
        self.replayed_seq = 0
        """The last history item drawn by replay; committed events up to it are skipped."""

    # -- history replay --------------------------------------------------------------------

    def load_history(
        self,
        items: list[dict[str, Any]],
        greeting: str = "",
        alerts: list[dict[str, Any]] | None = None,
    ) -> None:
        """Replace the conversation with committed history (the ``history`` reply)."""
        self.entries = []
        self._stream = None
        self._unconfirmed = []
        self._streamed_calls = []
        self._tools = {}
        if greeting:
            self.entries.append(InfoEntry(greeting))
        for item in items:
            self._add_item(item)
        for alert in alerts or []:  # raised at the pod's start-up, before we could listen
            self._on_alert(alert)
        self.replayed_seq = max((int(item.get("seq", 0)) for item in items), default=0)

    def _add_item(self, item: dict[str, Any]) -> None:
        kind = item.get("kind")
        if kind == "user_message":
            self.entries.append(UserEntry(list(item.get("segments") or [])))
        elif kind == "assistant":
            for block in item.get("blocks") or []:
                btype = block.get("type")
                if btype == "text":
                    self.entries.append(AssistantEntry(text=str(block.get("text", ""))))
                elif btype == "thinking":
                    self.entries.append(ThinkingEntry(text=str(block.get("thinking", ""))))
                elif btype == "tool_use":
                    self._tools[str(block.get("id"))] = len(self.entries)
                    self.entries.append(
                        ToolEntry(
                            id=str(block.get("id")),
                            name=str(block.get("name", "")),
                            arguments=dict(block.get("input") or {}),
                            synthetic=bool(item.get("synthetic")),
                        )
                    )
        elif kind == "tool_result":
            self._result(
                str(item.get("call_id")),
                summary=str(item.get("summary", "")),
                content=item.get("content"),
                is_error=bool(item.get("is_error")),
                synthetic=bool(item.get("synthetic")),
            )
        elif kind == "system_message":
            self.entries.append(
                NoteEntry(text=str(item.get("text", "")), origin=str(item.get("origin", "")))
            )

    def _result(
        self, call_id: str, *, summary: str, content: Any, is_error: bool, synthetic: bool
    ) -> Change:
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
        entry.summary = summary
        entry.content = content if isinstance(content, str) else None
        entry.is_error = is_error
        entry.synthetic = entry.synthetic or synthetic
        return Change(kind, index)

    # -- live events -------------------------------------------------------------------------

    def _add(self, entry: Entry) -> Change:
        self.entries.append(entry)
        return Change("added", len(self.entries) - 1)

    def _end_stream(self, *, interrupted: bool) -> list[Change]:
        """Streamed text not confirmed by ``text_done`` was never committed: mark it."""
        self._stream = None
        changes = []
        for index in self._unconfirmed:
            entry = self.entries[index]
            assert isinstance(entry, AssistantEntry)
            entry.streaming = False
            entry.interrupted = interrupted
            changes.append(Change("updated", index))
        self._unconfirmed = []
        for index in self._streamed_calls:
            tool = self.entries[index]
            assert isinstance(tool, ToolEntry)
            if interrupted and tool.summary is None:
                tool.summary = "interrupted · not kept in history"
                changes.append(Change("updated", index))
        self._streamed_calls = []
        return changes

    def apply(self, event: str, data: dict[str, Any]) -> list[Change]:
        """Apply one broadcast event; returns what changed in the conversation."""
        handler = getattr(self, f"_on_{event}", None)
        if handler is None:
            return []  # turn_start, replies and unknown events draw nothing
        seq = data.get("seq")
        if isinstance(seq, int) and seq <= self.replayed_seq:
            # Committed before the history reply was made: the replay already drew it.
            return []
        changes: list[Change] = handler(data)
        return changes

    def _on_status(self, data: dict[str, Any]) -> list[Change]:
        self.pod.update(data)
        return []

    def _on_usage(self, data: dict[str, Any]) -> list[Change]:
        self.pod.input_tokens += int(data.get("input_tokens", 0))
        self.pod.output_tokens += int(data.get("output_tokens", 0))
        return []

    def _on_user_message(self, data: dict[str, Any]) -> list[Change]:
        return [self._add(UserEntry(list(data.get("segments") or [])))]

    def _on_text_delta(self, data: dict[str, Any]) -> list[Change]:
        delta = str(data.get("text", ""))
        if self._stream is None:
            self._stream = len(self.entries)
            self._unconfirmed.append(self._stream)
            return [self._add(AssistantEntry(text=delta, streaming=True))]
        entry = self.entries[self._stream]
        assert isinstance(entry, AssistantEntry)
        entry.text += delta
        return [Change("appended", self._stream, delta)]

    def _on_text_done(self, data: dict[str, Any]) -> list[Change]:
        text = str(data.get("text", ""))
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

    def _on_thinking_delta(self, data: dict[str, Any]) -> list[Change]:
        last = self.entries[-1] if self.entries else None
        if isinstance(last, ThinkingEntry):
            last.text += str(data.get("text", ""))
            return [Change("updated", len(self.entries) - 1)]
        return [self._add(ThinkingEntry(text=str(data.get("text", ""))))]

    def _tool(self, call_id: str, name: str) -> tuple[ToolEntry, Change]:
        index = self._tools.get(call_id)
        if index is None:
            self._tools[call_id] = len(self.entries)
            entry = ToolEntry(id=call_id, name=name)
            return entry, self._add(entry)
        found = self.entries[index]
        assert isinstance(found, ToolEntry)
        return found, Change("updated", index)

    def _on_tool_call_start(self, data: dict[str, Any]) -> list[Change]:
        # Text after this call belongs to a new block; the streamed one awaits its text_done.
        self._stream = None
        call_id = str(data.get("id"))
        self._tools.pop(call_id, None)
        change = self._tool(call_id, str(data.get("name", "")))[1]
        self._streamed_calls.append(change.index)
        return [change]

    def _on_tool_call_args_delta(self, data: dict[str, Any]) -> list[Change]:
        if str(data.get("id")) not in self._tools:
            return []
        tool, change = self._tool(str(data.get("id")), "")
        tool.args_json += str(data.get("json", ""))
        return [change]

    def _on_tool_call_done(self, data: dict[str, Any]) -> list[Change]:
        tool, change = self._tool(str(data.get("id")), str(data.get("name", "")))
        tool.arguments = dict(data.get("arguments") or {})
        if change.index in self._streamed_calls:
            self._streamed_calls.remove(change.index)  # committed
        return [change]

    def _on_tool_result(self, data: dict[str, Any]) -> list[Change]:
        change = self._result(
            str(data.get("id")),
            summary=str(data.get("summary", "")),
            content=data.get("content"),
            is_error=bool(data.get("is_error")),
            synthetic=bool(data.get("synthetic")),
        )
        return [change]

    def _on_system_note(self, data: dict[str, Any]) -> list[Change]:
        note = NoteEntry(text=str(data.get("text", "")), origin=str(data.get("origin", "")))
        return [self._add(note)]

    def _on_alert(self, data: dict[str, Any]) -> list[Change]:
        message = str(data.get("message", ""))
        self.pod.last_alert = message.splitlines()[0] if message else ""
        alert = AlertEntry(
            level=str(data.get("level", "warn")),
            source=str(data.get("source", "")),
            message=message,
        )
        return [self._add(alert)]

    def _on_run_end(self, data: dict[str, Any]) -> list[Change]:
        # Deltas of a paused or cancelled stream were never committed: say so.
        return self._end_stream(interrupted=data.get("result") != "finished")

    def _on_turn_end(self, data: dict[str, Any]) -> list[Change]:
        return self._end_stream(interrupted=False)

    def _on_shutdown(self, data: dict[str, Any]) -> list[Change]:
        changes = self._end_stream(interrupted=True)
        self.pod.status = "stopped"
        changes.append(self._add(InfoEntry("The pod has shut down.")))
        return changes

    def disconnected(self) -> list[Change]:
        """The connection ended (EOF)."""
        self.pod.connected = False
        self.pod.status = "disconnected"
        return self._end_stream(interrupted=True)

    def info(self, text: str) -> Change:
        """Add a line from the UI itself."""
        return self._add(InfoEntry(text))

    # -- comparisons ------------------------------------------------------------------------

    def transcript(self) -> list[str]:
        """A plain-text digest of the entries (for tests and debugging)."""
        out: list[str] = []
        for entry in self.entries:
            if isinstance(entry, UserEntry):
                out.append("user: " + "".join(segment_text(s) for s in entry.segments))
            elif isinstance(entry, AssistantEntry):
                out.append("assistant: " + entry.text)
            elif isinstance(entry, ThinkingEntry):
                out.append("thinking: " + entry.text)
            elif isinstance(entry, ToolEntry):
                out.append("tool: " + entry.title)
            elif isinstance(entry, NoteEntry):
                out.append(f"note[{entry.origin}]: {entry.text}")
            elif isinstance(entry, AlertEntry):
                out.append(f"alert[{entry.level}]: {entry.message}")
            else:
                out.append("info: " + entry.text)
        return out


def segment_text(segment: dict[str, Any]) -> str:
    """A segment as one string: its text, or its chip label."""
    label = segment_label(segment)
    return str(segment.get("text", "")) if label is None else label
