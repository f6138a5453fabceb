"""What the chat UI's parts need of the app: the one place they share.

The app (:class:`~cli.tui.app.PodApp`) composes the parts (drawing, key actions, slash
commands, answers to waiting cards, tool card selection) and is their host; each part reaches
the model, the widgets and the pod only through this, so what a part may touch is written
down here rather than being all of the app.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any, Protocol

from textual.widget import Widget

from cli.tui.conversation import Conversation
from cli.tui.editor import ChipEditor
from cli.tui.entries import Change
from cli.tui.entry_views import EntryView
from cli.tui.input import InputChips
from cli.tui.link import PodLink
from cli.tui.model import ChatModel
from cli.tui.notices import Notice
from orchestrator.protocol import HistoryData, StatusData


class AppHost(Protocol):
    """The app as its parts see it."""

    model: ChatModel
    chips: InputChips
    link: PodLink | None
    clock: Callable[[], float]

    @property
    def editor(self) -> ChipEditor:
        """The input editor."""
        ...

    @property
    def conversation(self) -> Conversation:
        """The scrolling conversation."""
        ...

    @property
    def focused(self) -> Widget | None:
        """The widget that has the keys."""
        ...

    @property
    def closing_down(self) -> bool:
        """True once the UI exits: widgets may be gone."""
        ...

    def say(self, notice: Notice | None) -> None:
        """Show a notice (None clears the line)."""
        ...

    def show_status(self) -> None:
        """Draw the status line (and drop a notice it made stale)."""
        ...

    def toggle_todos(self) -> bool:
        """Open or close the todo panel; True when it is open now."""
        ...

    async def send(
        self, method: str, params: dict[str, Any] | None = None, *, id: str | None = None
    ) -> bool:
        """Send a method to the pod; False (and a notice) when it could not be sent."""
        ...

    async def draw(self, changes: list[Change]) -> None:
        """Draw what the model changed."""
        ...

    async def redraw(self, status: StatusData, history: HistoryData) -> None:
        """Replace the conversation on screen with the pod's history as it now is."""
        ...

    def view(self, index: int) -> EntryView | None:
        """The view drawn for the model's entry ``index``."""
        ...

    async def action_press(self, key: str) -> None:
        """Act as Ctrl-C, Ctrl-X or Ctrl-D."""
        ...

    def run_worker(self, work: Coroutine[Any, Any, None], *, group: str) -> object:
        """Run ``work`` beside the app's message queue."""
        ...

    def exit(self, result: str | None = None) -> None:
        """Leave the UI, saying how it ended."""
        ...
