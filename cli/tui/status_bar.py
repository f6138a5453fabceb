"""The two lines around the editor: the status line below it, the notice line above it.

Both draw plain :class:`~rich.text.Text`, never markup.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from cli.tui.notices import NoticeLevel
from cli.tui.pod_view import PodView
from orchestrator.core.status_colours import STATUS_COLOURS


class StatusBar(Static):
    """The bottom line: pod, model, state (with the paused hint), tokens, last alert."""

    DEFAULT_CSS = """
    StatusBar {
        height: auto;
        padding: 0 1;
        background: $panel;
    }
    """ + "".join(
        # The statuses the line marks, in the colours the web page shares (status_colours).
        f"StatusBar.-{status} {{ background: ${STATUS_COLOURS[status].theme}-muted; }}\n"
        for status in ("running", "paused")
    )

    plain: str = ""
    """The status line as plain text (what tests read)."""

    _shown: tuple[PodView, float | None] | None = None

    def show(self, pod: PodView, now: float | None = None) -> None:
        """Redraw from the pod view (only when something changed: this runs per event),
        each row fitted to the width there is (before the first layout: not yet known)."""
        self._shown = (pod, now)
        width = self.content_size.width or None
        text = pod.text(now, width)
        self.set_class(pod.status == "paused", "-paused")
        self.set_class(pod.status == "running", "-running")
        if text != self.plain:
            self.plain = text
            self.update(Text(text))

    def on_resize(self) -> None:
        """Fit the rows to the new width."""
        if self._shown is not None:
            self.show(*self._shown)


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
