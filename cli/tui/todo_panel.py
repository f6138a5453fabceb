"""The todo panel: the model's todo list between the conversation and the editor.

Hidden while the list is empty. Open, it shows a heading and the items (at most
:data:`SHOWN_ITEMS`, kept around the one in progress); closed (``/todos`` toggles it), one
line: how far the list is and what is being done. Every row is cut to the width there is,
so it holds at 80 columns and less. The items are the model's text: one line each, control
characters escaped (:mod:`cli.todo_text`), drawn as plain :class:`~rich.text.Text`.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widgets import Static

from cli.todo_text import todo_counts, todo_line, todo_text
from cli.tui.entries import cut_end
from orchestrator.protocol import TodoData

__all__ = ["SHOWN_ITEMS", "TodoPanel", "todo_panel_lines"]

SHOWN_ITEMS = 8
"""Items an open panel shows; the rest are counted (the conversation keeps the room)."""


def _window(todos: Sequence[TodoData]) -> tuple[int, int]:
    """Which items an open panel shows: from the one in progress (or the first not done),
    with one done item before it for context, :data:`SHOWN_ITEMS` in all."""
    if len(todos) <= SHOWN_ITEMS:
        return 0, len(todos)
    focus = next((i for i, t in enumerate(todos) if t.status == "in_progress"), None)
    if focus is None:
        focus = next((i for i, t in enumerate(todos) if t.status != "completed"), len(todos) - 1)
    start = max(0, min(focus - 1, len(todos) - SHOWN_ITEMS))
    return start, start + SHOWN_ITEMS


def todo_panel_lines(
    todos: Sequence[TodoData], *, expanded: bool = True, width: int | None = None
) -> list[str]:
    """The panel's rows (none while the list is empty), each at most ``width`` cells."""
    if not todos:
        return []
    items = [t.model_dump() for t in todos]
    done, count = todo_counts(items)
    now = next((item for item in items if item["status"] == "in_progress"), None)
    doing = f" · ▶ {todo_text(now)}" if now is not None else ""
    hint = "/todos hides" if expanded else "/todos shows"
    head = f"☰ todos {done}/{count} done{doing if not expanded else ''} ({hint})"
    rows = [head]
    if expanded:
        start, end = _window(todos)
        if start:
            rows.append(f"  … {start} earlier")
        rows += [f"  {todo_line(item)}" for item in items[start:end]]
        if end < count:
            rows.append(f"  … {count - end} more")
    return [cut_end(row, width) for row in rows] if width else rows


class TodoPanel(Static):
    """The todo list, above the notice line and the editor."""

    DEFAULT_CSS = """
    TodoPanel {
        height: auto;
        padding: 0 1;
        border-top: solid $panel;
    }
    TodoPanel.-empty {
        display: none;
    }
    """

    plain: str = ""
    """The panel as plain text (what tests read)."""

    expanded: bool = True
    """Open (the items) or closed (one line); ``/todos`` toggles it."""

    _todos: Sequence[TodoData] = ()

    def show(self, todos: Sequence[TodoData]) -> None:
        """Redraw from the list (only when something changed: this runs per event)."""
        self._todos = todos
        width = self.content_size.width or None
        text = "\n".join(todo_panel_lines(todos, expanded=self.expanded, width=width))
        self.set_class(not text, "-empty")
        if text != self.plain:
            self.plain = text
            self.update(Text(text))

    def toggle(self) -> bool:
        """Open or close the panel; True when it is open now."""
        self.expanded = not self.expanded
        self.show(self._todos)
        return self.expanded

    def on_resize(self) -> None:
        """Fit the rows to the new width."""
        self.show(self._todos)
