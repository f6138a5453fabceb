"""The conversation's widgets: entries, expandable cards, the scroll view, the status line.

Each widget carries its own CSS (``DEFAULT_CSS``). Text that comes from the pod, the model or
a tool is always drawn as plain :class:`~rich.text.Text`, never parsed as markup, so
``[Interrupted by user]``, ``echo [Hello World]``, ``[bold]`` and backslashes show as written.
"""

from __future__ import annotations

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Markdown, Static

from cli.tui.entries import (
    NOT_KEPT,
    AlertEntry,
    ApprovalEntry,
    AssistantEntry,
    Entry,
    InfoEntry,
    NoteEntry,
    ThinkingEntry,
    ToolEntry,
    UserEntry,
)
from cli.tui.input import segment_label
from cli.tui.notices import NoticeLevel
from cli.tui.pod_view import PodView
from orchestrator.segments import TextSegment

CHIP_STYLE = "bold #1c1c1c on #87afd7"
"""Chips are drawn as light-blue blocks, readable on dark and light themes alike."""


def _first_line(text: str) -> str:
    return text.splitlines()[0] if text else ""


# -- conversation entries ------------------------------------------------------------------------


def user_text(entry: UserEntry) -> Text:
    """A user message with its non-text segments drawn as chips."""
    text = Text("› ", style="bold")
    for seg in entry.segments:
        label = segment_label(seg)
        if label is None:
            text.append(seg.text if isinstance(seg, TextSegment) else "")
        else:
            text.append(label, style=CHIP_STYLE)
    return text


class UserView(Static):
    """A user message."""

    DEFAULT_CSS = """
    UserView {
        background: $boost;
        padding: 0 1;
        margin: 1 0 0 0;
    }
    """

    def __init__(self, entry: UserEntry) -> None:
        super().__init__(user_text(entry))


class AssistantView(Markdown):
    """Assistant text as Markdown; while it streams, deltas are re-rendered at most every 50 ms.

    Textual's ``MarkdownStream`` does the same batching, but stopping it before its task ran
    raises ``CancelledError`` into the caller; a timer owned by the widget cannot.
    """

    DEFAULT_CSS = """
    AssistantView {
        padding: 0 1;
        margin: 1 0 0 0;
    }
    AssistantView MarkdownBlock:last-child {
        margin-bottom: 0;
    }
    /* Textual's headers take three blank rows; a 24-row terminal cannot spare them. */
    AssistantView MarkdownHeader {
        margin: 1 0 0 0;
    }
    AssistantView MarkdownHeader:first-child {
        margin-top: 0;
    }
    AssistantView.-interrupted {
        border-bottom: dashed $warning;
        border-subtitle-color: $warning;
    }
    """

    FLUSH_S = 0.05

    def __init__(self, entry: AssistantEntry) -> None:
        super().__init__(entry.text)
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
        self.border_subtitle = NOT_KEPT if entry.interrupted else ""


class ThinkingView(Static):
    """Assistant thinking, dimmed."""

    DEFAULT_CSS = """
    ThinkingView {
        color: $text-muted;
        text-style: italic;
        padding: 0 1;
    }
    """

    def __init__(self, entry: ThinkingEntry) -> None:
        super().__init__(Text(entry.text))

    def refresh_from(self, entry: ThinkingEntry) -> None:
        """Show the thinking text so far."""
        self.update(Text(entry.text))


class Card(Widget):
    """A one-line title that expands to its body: Enter on the selected card, or a click.

    Cards never take focus (the editor keeps it, so no keystroke is ever delivered to a
    card); the app selects one with Tab and the arrow keys instead.
    """

    DEFAULT_CSS = """
    Card {
        height: auto;
    }
    Card > .card--title {
        padding: 0 1;
        /* One line cut at the width there is: the outcome and keys at the end show on a
           wide terminal, and an ellipsis says a narrow one cut them. */
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    Card > .card--tail {
        color: $text-muted;
        padding: 0 1 0 4;
    }
    Card > .card--body {
        display: none;
        padding: 0 1 0 4;
    }
    Card.-expanded > .card--body {
        display: block;
    }
    Card:hover > .card--title {
        background: $block-hover-background;
    }
    Card.-selected > .card--title {
        background: $block-cursor-background;
        color: $block-cursor-foreground;
        text-style: $block-cursor-text-style;
    }
    """

    expanded: reactive[bool] = reactive(False, init=False)

    def __init__(self, title: str, body: str, *, tail: str = "") -> None:
        super().__init__()
        self._title_text = title
        self._title = Static(classes="card--title")
        self._tail = Static(Text(tail), classes="card--tail")
        self._tail.display = bool(tail)
        self._body = Static(Text(body), classes="card--body")
        self._show_title()

    def compose(self) -> ComposeResult:
        """Title, the live tail, and the body."""
        yield self._title
        yield self._tail
        yield self._body

    @property
    def title_text(self) -> str:
        """The title as drawn, without the expander symbol."""
        return self._title_text

    def set_content(self, title: str, body: str, tail: str = "") -> None:
        """Replace title, body and live tail."""
        self._title_text = title
        self._show_title()
        self._body.update(Text(body))
        self._tail.update(Text(tail))
        self._tail.display = bool(tail)

    def _show_title(self) -> None:
        symbol = "▼" if self.expanded else "▶"
        self._title.update(Text(f"{symbol} {_first_line(self._title_text)}"))

    def toggle(self) -> None:
        """Expand or collapse; an expanded card is brought into view once it is laid out
        (before that its region is still one line, and the newest card's body would open
        below the bottom of the view)."""
        self.expanded = not self.expanded
        if self.expanded:
            self.call_after_refresh(self.scroll_visible, animate=False)

    def watch_expanded(self, expanded: bool) -> None:
        """Show or hide the body."""
        self.set_class(expanded, "-expanded")
        self._show_title()

    def on_click(self, event: events.Click) -> None:
        """A click toggles the card."""
        event.stop()
        self.toggle()


class ToolCard(Card):
    """A tool call: name, arguments and summary in the title, its live output while it runs."""

    DEFAULT_CSS = """
    ToolCard.-synthetic > .card--title {
        color: $accent;
        text-style: italic;
    }
    ToolCard.-error > .card--title {
        color: $error;
    }
    """

    def __init__(self, entry: ToolEntry) -> None:
        super().__init__(entry.title, entry.body, tail=entry.live_tail())
        self.refresh_from(entry)

    def refresh_from(self, entry: ToolEntry) -> None:
        """Update title, body and live output as arguments, output and the result arrive."""
        self.set_content(entry.title, entry.body, entry.live_tail())
        self.set_class(entry.synthetic, "-synthetic")
        self.set_class(entry.is_error, "-error")
        self.set_class(entry.running, "-running")


class NoteView(Card):
    """A system message (file body, notification, interrupt marker), collapsed to one line."""

    DEFAULT_CSS = """
    NoteView > .card--title {
        color: $text-muted;
        text-style: italic;
    }
    """

    def __init__(self, entry: NoteEntry) -> None:
        super().__init__(f"✎ system ({entry.origin}): {_first_line(entry.text)}", entry.text)


class AlertView(Static):
    """An alert from the pod, in a distinct style per level."""

    DEFAULT_CSS = """
    AlertView {
        padding: 0 1;
    }
    AlertView.-warn {
        color: $text-warning;
        background: $warning-muted;
    }
    AlertView.-error {
        color: $text-error;
        background: $error-muted;
    }
    """

    def __init__(self, entry: AlertEntry) -> None:
        icon = "✖" if entry.level == "error" else "⚠"
        super().__init__(Text(f"{icon} {entry.source}: {entry.message}"))
        self.add_class(f"-{entry.level}")


class InfoView(Static):
    """A line from the UI itself."""

    DEFAULT_CSS = """
    InfoView {
        color: $text-muted;
        padding: 0 1;
    }
    """

    def __init__(self, entry: InfoEntry) -> None:
        super().__init__(Text(entry.text))


class ApprovalCard(Card):
    """A tool call waiting for approval: what it would do (the diff of an edit), open at once."""

    DEFAULT_CSS = """
    ApprovalCard.-waiting > .card--title {
        color: $text-warning;
        background: $warning-muted;
        text-style: bold;
    }
    """

    def __init__(self, entry: ApprovalEntry) -> None:
        super().__init__(entry.title, entry.body)
        self.refresh_from(entry)

    def refresh_from(self, entry: ApprovalEntry) -> None:
        """Show the request, then how it was answered (collapsed once answered)."""
        self.set_content(entry.title, entry.body)
        waiting = entry.decision == "waiting"
        self.set_class(waiting, "-waiting")
        self.expanded = waiting


EntryView = (
    UserView
    | AssistantView
    | ThinkingView
    | ToolCard
    | NoteView
    | AlertView
    | InfoView
    | ApprovalCard
)


def view_for(entry: Entry) -> EntryView:
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
    if isinstance(entry, ApprovalEntry):
        return ApprovalCard(entry)
    return InfoView(entry)


# -- the scroll view ---------------------------------------------------------------------------


class NewOutputMarker(Static):
    """``new output ↓``: shown over the bottom row while the user reads further up."""

    DEFAULT_CSS = """
    NewOutputMarker {
        dock: bottom;
        width: auto;
        offset-x: 1;
        padding: 0 1;
        background: $accent;
        color: $text;
        display: none;
    }
    """

    class Clicked(Message):
        """The marker was clicked: jump to the end."""

    def __init__(self) -> None:
        super().__init__(Text("new output ↓ (PageDown)"))

    def on_click(self, event: events.Click) -> None:
        """Ask the conversation to follow the stream again."""
        event.stop()
        self.post_message(self.Clicked())


class Conversation(VerticalScroll, can_focus=False):
    """The scrolling conversation: it follows new output unless the user scrolled up.

    Following is a fact about the position, read whenever the user (or anything) scrolls: at
    the bottom the view follows; scrolled up it stays put and shows :class:`NewOutputMarker`
    when something new arrives below. It never takes focus, so the editor keeps every key.
    """

    DEFAULT_CSS = """
    Conversation {
        height: 1fr;
    }
    Conversation.-unseen > NewOutputMarker {
        display: block;
    }
    """

    following: reactive[bool] = reactive(True, init=False)

    def compose(self) -> ComposeResult:
        """The marker; entries are mounted after it (it is docked, out of the flow)."""
        yield NewOutputMarker()

    @property
    def entries(self) -> list[Widget]:
        """The entry widgets, in order."""
        return [w for w in self.children if not isinstance(w, NewOutputMarker)]

    async def clear_entries(self) -> None:
        """Remove every entry widget (before a history replay)."""
        await self.remove_children(self.entries)

    def follow(self) -> None:
        """Jump to the end and follow new output again."""
        self.following = True
        self.scroll_end(animate=False)

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        """Whether the view follows is where the user left it: at the bottom or not."""
        super().watch_scroll_y(old_value, new_value)
        self.following = new_value >= self.max_scroll_y - 1

    def watch_following(self, following: bool) -> None:
        """Back at the bottom: nothing unseen any more."""
        if following:
            self.remove_class("-unseen")

    def watch_virtual_size(self, old: Size, new: Size) -> None:
        """The content grew or shrank: keep the end in view, or mark that there is more."""
        if self.following:
            self.scroll_end(animate=False, immediate=True)
        elif new.height > old.height:
            self.add_class("-unseen")

    def on_new_output_marker_clicked(self) -> None:
        """The marker was clicked."""
        self.follow()


# -- status and notices ------------------------------------------------------------------------


class StatusBar(Static):
    """The bottom line: pod, model, state (with the paused hint), tokens, last alert."""

    DEFAULT_CSS = """
    StatusBar {
        height: auto;
        padding: 0 1;
        background: $panel;
    }
    StatusBar.-running {
        background: $primary-muted;
    }
    StatusBar.-paused {
        background: $warning-muted;
    }
    """

    plain: str = ""
    """The status line as plain text (what tests read)."""

    def show(self, pod: PodView, now: float | None = None) -> None:
        """Redraw from the pod view (only when something changed: this runs per event)."""
        text = pod.text(now)
        self.set_class(pod.status == "paused", "-paused")
        self.set_class(pod.status == "running", "-running")
        if text != self.plain:
            self.plain = text
            self.update(Text(text))


class NoticeLine(Static):
    """One line above the editor: answers to keys, kept input, errors; empty when none."""

    DEFAULT_CSS = """
    NoticeLine {
        height: auto;
        padding: 0 1;
    }
    NoticeLine.-empty {
        display: none;
    }
    NoticeLine.-warn {
        color: $text-warning;
    }
    NoticeLine.-error {
        color: $text-error;
    }
    """

    plain: str = ""

    def say(self, text: str, *, level: NoticeLevel = "info") -> None:
        """Show a notice (empty text hides the line)."""
        if text == self.plain and self.has_class(f"-{level}"):
            return
        self.plain = text
        self.set_class(not text, "-empty")
        for name in ("info", "warn", "error"):
            self.set_class(name == level, f"-{name}")
        self.update(Text(text))
