"""The expandable cards of the conversation: tool calls, system messages, approval requests.

Each widget carries its own CSS (``DEFAULT_CSS``). Text that comes from the pod, the model or
a tool is always drawn as plain :class:`~rich.text.Text`, never parsed as markup, so
``[Interrupted by user]``, ``echo [Hello World]``, ``[bold]`` and backslashes show as written.
"""

from __future__ import annotations

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Markdown, Static

from cli.tui.entries import ApprovalEntry, NoteEntry, TitleParts, ToolEntry
from cli.tui.web_entries import ServerToolEntry


def _first_line(text: str) -> str:
    return text.splitlines()[0] if text else ""


class CardTitle(Widget):
    """A card's title line, fitted to the width it has each time it is drawn: a title in
    parts (:class:`TitleParts`) gives up its arguments before its outcome, so at 80 columns
    ``bash: started ba…`` becomes ``bash(comm…) → started background job j1: …``."""

    DEFAULT_CSS = """
    CardTitle {
        height: auto;
    }
    """

    def __init__(self, classes: str) -> None:
        super().__init__(classes=classes)
        self.symbol = "▶"
        self.title: str | TitleParts = ""

    def show(self, symbol: str, title: str | TitleParts) -> None:
        """Draw this symbol (``""``: none) and title from now on; a plain string is drawn
        as it is (the card's CSS says whether it wraps)."""
        if (symbol, title) != (self.symbol, self.title):
            self.symbol, self.title = symbol, title
            self.refresh(layout=True)

    def render(self) -> Text:
        """The symbol and the title, fitted to the content width (plain text, never markup)."""
        title = self.title
        prefix = f"{self.symbol} " if self.symbol else ""
        width = self.content_size.width - len(prefix)
        if isinstance(title, TitleParts) and width > 0:
            return Text(prefix + title.fit(width))
        return Text(prefix + str(title))


class Card(Widget):
    """A one-line title that expands to its body: Space on the selected card, or a click.

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

    def __init__(self, title: str | TitleParts, body: str, *, tail: str = "") -> None:
        super().__init__()
        self._title_text = title
        self._title = CardTitle(classes="card--title")
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
        """The whole title, without the expander symbol (a narrow terminal may cut it)."""
        return str(self._title_text)

    def set_content(self, title: str | TitleParts, body: str, tail: str = "") -> None:
        """Replace title, body and live tail."""
        self._title_text = title
        self._show_title()
        self._body.update(Text(body))
        self._tail.update(Text(tail))
        self._tail.display = bool(tail)

    def _show_title(self) -> None:
        title = self._title_text
        shown = title if isinstance(title, TitleParts) else _first_line(title)
        self._title.show("▼" if self.expanded else "▶", shown)

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
        super().__init__(entry.title_parts, entry.body, tail=entry.live_tail())
        self.refresh_from(entry)

    def refresh_from(self, entry: ToolEntry) -> None:
        """Update title, body and live output as arguments, output and the result arrive."""
        self.set_content(entry.title_parts, entry.body, entry.live_tail())
        self.set_class(entry.synthetic, "-synthetic")
        self.set_class(entry.is_error, "-error")
        self.set_class(entry.running, "-running")


class ServerToolCard(Card):
    """A web search or fetch the API ran: what it asked, then the pages found (or the error
    in words); expanded, each source on a line. Plain text only (see :mod:`cli.web_text`)."""

    DEFAULT_CSS = """
    ServerToolCard.-error > .card--title {
        color: $error;
    }
    """

    def __init__(self, entry: ServerToolEntry) -> None:
        super().__init__(entry.title_parts, entry.body)
        self.refresh_from(entry)

    def refresh_from(self, entry: ServerToolEntry) -> None:
        """Show the result once it arrived."""
        self.set_content(entry.title_parts, entry.body)
        self.set_class(bool(entry.error_code), "-error")
        self.set_class(not entry.done, "-running")


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
        super().__init__(entry.title_parts, entry.body)
        self.refresh_from(entry)

    def refresh_from(self, entry: ApprovalEntry) -> None:
        """Show the request, then how it was answered (collapsed once answered)."""
        self.set_content(entry.title_parts, entry.body)
        waiting = entry.decision == "waiting"
        self.set_class(waiting, "-waiting")
        self.expanded = waiting


class PlanCard(ApprovalCard):
    """A plan waiting for approval: the model's markdown rendered whole, open at once.

    The plan reaches the renderer with its control characters escaped (the model's text never
    drives the terminal), and Markdown is drawn by widgets, never printed raw.
    """

    DEFAULT_CSS = """
    PlanCard > .card--plan {
        display: none;
        padding: 0 1 0 4;
        height: auto;
    }
    PlanCard.-expanded > .card--plan {
        display: block;
    }
    """

    def __init__(self, entry: ApprovalEntry) -> None:
        self._plan = Markdown(entry.body, classes="card--plan")
        super().__init__(entry)
        self._body.display = False  # the plan is drawn rendered, below, instead

    def compose(self) -> ComposeResult:
        """Title, then the rendered plan."""
        yield from super().compose()
        yield self._plan

    @property
    def plan_source(self) -> str:
        """The markdown the card renders (what tests read)."""
        return self._plan.source
