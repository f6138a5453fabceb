"""The widget that draws each conversation entry: messages, thinking, alerts, UI lines, cards.

Each widget carries its own CSS (``DEFAULT_CSS``). Text that comes from the pod, the model or
a tool is always drawn as plain :class:`~rich.text.Text`, never parsed as markup, so
``[Interrupted by user]``, ``echo [Hello World]``, ``[bold]`` and backslashes show as written.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Markdown, Static

from cli.tui.cards import ApprovalCard, NoteView, PlanCard, ServerToolCard, ToolCard
from cli.tui.entries import (
    ALERT_GLYPHS,
    NOT_KEPT,
    AlertEntry,
    ApprovalEntry,
    AssistantEntry,
    ElicitationEntry,
    Entry,
    InfoEntry,
    NoteEntry,
    ThinkingEntry,
    ToolEntry,
    UserEntry,
)
from cli.tui.form_card import ElicitationCard
from cli.tui.input import segment_label
from cli.tui.web_entries import ServerToolEntry, SourcesEntry
from orchestrator.core.segments import TextSegment

CHIP_STYLE = "bold #1c1c1c on #87afd7"
"""Chips are drawn as light-blue blocks, readable on dark and light themes alike."""


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


THINKING_LABEL = "✻ thinking"
"""The header over the model's thinking, so dimmed italics are not taken for its answer."""


def thinking_text(entry: ThinkingEntry) -> Text:
    """The label on a line of its own, then the thinking so far (in the view's italics)."""
    text = Text(THINKING_LABEL, style="not italic bold")
    text.append("\n")
    text.append(entry.text)
    return text


class ThinkingView(Static):
    """Assistant thinking: dimmed, under a ``thinking`` label, with a rule at its left."""

    DEFAULT_CSS = """
    ThinkingView {
        color: $text-muted;
        text-style: italic;
        padding: 0 1;
        margin: 1 0 0 0;
        border-left: outer $secondary 50%;
    }
    """

    def __init__(self, entry: ThinkingEntry) -> None:
        super().__init__(thinking_text(entry))

    def refresh_from(self, entry: ThinkingEntry) -> None:
        """Show the thinking text so far."""
        self.update(thinking_text(entry))


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
        icon = ALERT_GLYPHS.get(entry.level, "⚠")
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


class SourcesView(Static):
    """The numbered sources a message cites, under it: plain text, never links or markup
    (titles and URLs are a web page's words)."""

    DEFAULT_CSS = """
    SourcesView {
        color: $text-muted;
        padding: 0 1;
    }
    """

    def __init__(self, entry: SourcesEntry) -> None:
        super().__init__(Text(entry.text))

    def refresh_from(self, entry: SourcesEntry) -> None:
        """More sources were cited."""
        self.update(Text(entry.text))


EntryView = (
    UserView
    | AssistantView
    | ThinkingView
    | ToolCard
    | ServerToolCard
    | SourcesView
    | NoteView
    | AlertView
    | InfoView
    | ApprovalCard
    | ElicitationCard
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
    if isinstance(entry, ServerToolEntry):
        return ServerToolCard(entry)
    if isinstance(entry, SourcesEntry):
        return SourcesView(entry)
    if isinstance(entry, NoteEntry):
        return NoteView(entry)
    if isinstance(entry, AlertEntry):
        return AlertView(entry)
    if isinstance(entry, ApprovalEntry):
        return PlanCard(entry) if entry.plan is not None else ApprovalCard(entry)
    if isinstance(entry, ElicitationEntry):
        return ElicitationCard(entry)
    return InfoView(entry)
