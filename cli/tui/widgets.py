"""The widgets of the chat UI: conversation entries, the chip-aware editor and the status line."""

from __future__ import annotations

from rich.text import Text
from textual import events
from textual.markup import escape
from textual.widgets import Collapsible, Markdown, OptionList, Static, TextArea

from cli.tui.model import (
    AlertEntry,
    AssistantEntry,
    Entry,
    InfoEntry,
    InputChips,
    NoteEntry,
    PodView,
    ThinkingEntry,
    ToolEntry,
    UserEntry,
    segment_label,
    should_chip_paste,
)

CHIP_STYLE = "bold #1c1c1c on #87afd7"
"""Chips are drawn as light-blue blocks, readable on dark and light themes alike."""

TITLE_LIMIT = 72


def _clip(text: str, limit: int = TITLE_LIMIT) -> str:
    line = text.splitlines()[0] if text else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


# -- input ----------------------------------------------------------------------------------


class ChipEditor(TextArea):
    """A multi-line editor whose chip tokens behave as single characters.

    Backspace or Delete next to a chip removes it whole and the cursor steps over it; a long
    or multi-line paste is inserted as a paste chip instead of its text.
    """

    def __init__(self, chips: InputChips, *, id: str | None = None) -> None:
        super().__init__(
            id=id,
            soft_wrap=True,
            show_line_numbers=False,
            tab_behavior="focus",
            placeholder="Message · Enter sends · Ctrl+J newline · @ attaches a file",
        )
        self.chips = chips

    def _around_cursor(self) -> tuple[int, int, str]:
        row, column = self.cursor_location
        return row, column, self.document[row]

    def insert_text(self, token: str) -> None:
        """Insert text or a chip token at the cursor (replacing any selection)."""
        result = self.replace(token, *self.selection, maintain_selection_offset=False)
        self.move_cursor(result.end_location)

    def action_delete_left(self) -> None:
        """Delete one character, or the whole chip that ends at the cursor."""
        if self.selection.is_empty:
            row, column, line = self._around_cursor()
            token = self.chips.token_before(line[:column])
            if token is not None:
                self.delete((row, column - len(token)), (row, column))
                return
        super().action_delete_left()

    def action_delete_right(self) -> None:
        """Delete one character, or the whole chip that starts at the cursor."""
        if self.selection.is_empty:
            row, column, line = self._around_cursor()
            token = self.chips.token_after(line[column:])
            if token is not None:
                self.delete((row, column), (row, column + len(token)))
                return
        super().action_delete_right()

    def action_cursor_left(self, select: bool = False) -> None:
        """Step over a chip as if it were one character."""
        row, column, line = self._around_cursor()
        token = self.chips.token_before(line[:column])
        if token is not None and not select:
            self.move_cursor((row, column - len(token)))
            return
        super().action_cursor_left(select)

    def action_cursor_right(self, select: bool = False) -> None:
        """Step over a chip as if it were one character."""
        row, column, line = self._around_cursor()
        token = self.chips.token_after(line[column:])
        if token is not None and not select:
            self.move_cursor((row, column + len(token)))
            return
        super().action_cursor_right(select)

    async def _on_paste(self, event: events.Paste) -> None:
        if self.read_only or not should_chip_paste(event.text):
            return  # TextArea's own handler inserts short pastes as text
        event.prevent_default()
        event.stop()
        self.insert_text(self.chips.paste(event.text))
        self.focus()


class CompletionList(OptionList):
    """``@`` file candidates; never focused, so typing continues in the editor."""

    can_focus = False


# -- conversation ---------------------------------------------------------------------------


def user_text(entry: UserEntry) -> Text:
    """A user message with its non-text segments drawn as chips."""
    text = Text("› ", style="bold")
    for seg in entry.segments:
        label = segment_label(seg)
        if label is None:
            text.append(str(seg.get("text", "")))
        else:
            text.append(label, style=CHIP_STYLE)
    return text


class UserView(Static):
    """A user message."""

    def __init__(self, entry: UserEntry) -> None:
        super().__init__(user_text(entry), classes="user")


class AssistantView(Markdown):
    """Assistant text as Markdown; while it streams, deltas are re-rendered at most every 50 ms.

    Textual's ``MarkdownStream`` does the same batching, but stopping it before its task ran
    raises ``CancelledError`` into the caller; a timer owned by the widget cannot.
    """

    FLUSH_S = 0.05

    def __init__(self, entry: AssistantEntry) -> None:
        super().__init__(entry.text, classes="assistant")
        self._pending = ""
        self._flushing = False
        self.refresh_from(entry)

    def stream(self, delta: str) -> None:
        """Queue a delta; the next flush appends everything queued in one go."""
        self._pending += delta
        if not self._flushing:
            self._flushing = True
            self.set_timer(self.FLUSH_S, self._flush)

    async def _flush(self) -> None:
        while self._pending:
            text, self._pending = self._pending, ""
            await self.append(text)
        self._flushing = False

    def finish(self, text: str) -> None:
        """The stream ended: make sure exactly ``text`` is shown."""
        pending, self._pending = self._pending, ""
        if pending:
            self.append(pending)
        if self.source != text:
            self.update(text)

    def refresh_from(self, entry: AssistantEntry) -> None:
        """Reflect the entry's flags (interrupted streams stay visible, marked)."""
        self.set_class(entry.streaming, "-streaming")
        self.set_class(entry.interrupted, "-interrupted")
        self.border_subtitle = "interrupted · not kept in history" if entry.interrupted else ""


class ThinkingView(Static):
    """Assistant thinking, dimmed."""

    def __init__(self, entry: ThinkingEntry) -> None:
        super().__init__(Text(entry.text), classes="thinking")

    def refresh_from(self, entry: ThinkingEntry) -> None:
        """Show the thinking text so far."""
        self.update(Text(entry.text))


class ToolCard(Collapsible):
    """A tool call: name, arguments and summary in the title, details when expanded."""

    def __init__(self, entry: ToolEntry) -> None:
        self._body = Static(Text(entry.body), classes="tool-body")
        super().__init__(self._body, title=escape(_clip(entry.title)), collapsed=True)
        self.add_class("tool")
        self.set_class(entry.synthetic, "-synthetic")
        self.set_class(entry.is_error, "-error")

    def refresh_from(self, entry: ToolEntry) -> None:
        """Update title and body as arguments and the result arrive."""
        self.title = escape(_clip(entry.title))
        self._body.update(Text(entry.body))
        self.set_class(entry.synthetic, "-synthetic")
        self.set_class(entry.is_error, "-error")


class NoteView(Collapsible):
    """A system message (file body, notification, interrupt marker), collapsed to one line."""

    def __init__(self, entry: NoteEntry) -> None:
        first = _clip(entry.text, TITLE_LIMIT - 12)
        title = f"✎ system ({entry.origin}): {first}"
        super().__init__(Static(Text(entry.text)), title=escape(title), collapsed=True)
        self.add_class("note")


class AlertView(Static):
    """An alert from the pod, in a distinct style per level."""

    def __init__(self, entry: AlertEntry) -> None:
        icon = "✖" if entry.level == "error" else "⚠"
        super().__init__(Text(f"{icon} {entry.source}: {entry.message}"), classes="alert")
        self.add_class(f"-{entry.level}")


class InfoView(Static):
    """A line from the UI itself."""

    def __init__(self, entry: InfoEntry) -> None:
        super().__init__(Text(entry.text), classes="info")


def view_for(entry: Entry) -> Static | Markdown | Collapsible:
    """The widget that draws one conversation entry."""
    if isinstance(entry, UserEntry):
        return UserView(entry)
    if isinstance(entry, AssistantEntry):
        return AssistantView(entry)
    if isinstance(entry, ThinkingEntry):
        return ThinkingView(entry)
    if isinstance(entry, ToolEntry):
        return ToolCard(entry)
    if isinstance(entry, NoteEntry):
        return NoteView(entry)
    if isinstance(entry, AlertEntry):
        return AlertView(entry)
    return InfoView(entry)


# -- status ---------------------------------------------------------------------------------


class StatusBar(Static):
    """The bottom line: pod, model, state (with the paused hint), tokens, last alert."""

    plain: str = ""
    """The status line as plain text (what tests read)."""

    def show(self, pod: PodView) -> None:
        """Redraw from the pod view (only when something changed: this runs per event)."""
        text = pod.text()
        self.set_class(pod.status == "paused", "-paused")
        self.set_class(pod.status == "running", "-running")
        if text != self.plain:
            self.plain = text
            self.update(Text(text))


class NoticeLine(Static):
    """One transient line above the editor: warnings about keys, kept input, errors."""

    plain: str = ""

    def say(self, text: str, *, level: str = "info") -> None:
        """Show a notice (empty text hides the line)."""
        self.plain = text
        self.set_class(not text, "-empty")
        for name in ("info", "warn", "error"):
            self.set_class(name == level, f"-{name}")
        self.update(Text(text))
