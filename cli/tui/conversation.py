"""The conversation's scroll view: it follows new output unless the user scrolled up."""

from __future__ import annotations

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Static


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
