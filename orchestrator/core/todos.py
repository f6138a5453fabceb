"""The pod's todo list (pure): its items, the versions it went through, and its text.

The list is the model's own plan of the work, written whole by each ``todo_write`` call
(:mod:`orchestrator.capabilities.tools.todos`). Every version is a synced ``todos`` record in
the session, numbered with the item that came next (``seq``), so a rewind to before user
message ``to_seq`` keeps exactly the versions written before that message was committed:
:meth:`TodoList.rewind` and :func:`todos_before` say which.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, TypeVar

__all__ = [
    "MAX_TODOS",
    "MAX_TODO_CHARS",
    "STATUS_MARKS",
    "Todo",
    "TodoList",
    "TodoStatus",
    "TodoVersion",
    "render_todos",
    "todos_before",
    "todos_note",
]

TodoStatus = Literal["pending", "in_progress", "completed"]

MAX_TODOS = 100
"""Items one list may hold: a plan, not a log (and each version is a session record)."""
MAX_TODO_CHARS = 1000
"""Characters one item's ``content`` (or ``active_form``) may hold."""

STATUS_MARKS: dict[str, str] = {"pending": "[ ]", "in_progress": "[>]", "completed": "[x]"}
"""How each status is marked in the text the model and ``pod run`` read."""


@dataclass(frozen=True, slots=True)
class Todo:
    """One item of the list."""

    content: str
    """What to do, imperative (``Run the tests``)."""
    status: TodoStatus = "pending"
    active_form: str | None = None
    """The same, as it is being done (``Running the tests``): shown while in progress."""


@dataclass(frozen=True, slots=True)
class TodoVersion:
    """One state of the list, as a ``todos`` record keeps it."""

    seq: int
    """The number the next history item got: the list was written before item ``seq``."""
    todos: tuple[Todo, ...]
    call_id: str = ""
    """The ``todo_write`` call that wrote it (empty: copied by a fork)."""


class _Versioned(Protocol):
    @property
    def seq(self) -> int: ...


V = TypeVar("V", bound=_Versioned)


def todos_before(versions: Iterable[V], to_seq: int) -> list[V]:
    """The versions a rewind (or fork) to before user message ``to_seq`` keeps: those written
    before that message was committed (``seq <= to_seq``), in their order."""
    return [version for version in versions if version.seq <= to_seq]


class TodoList:
    """The list as it is now, with every version it went through (for rewind)."""

    def __init__(self, versions: Iterable[TodoVersion] = ()) -> None:
        self._versions: list[TodoVersion] = list(versions)

    @property
    def current(self) -> tuple[Todo, ...]:
        """The list now (empty before the first ``todo_write``)."""
        return self._versions[-1].todos if self._versions else ()

    @property
    def versions(self) -> list[TodoVersion]:
        """Every version, oldest first (a copy)."""
        return list(self._versions)

    def replace(self, version: TodoVersion) -> None:
        """Make ``version`` the list."""
        self._versions.append(version)

    def withdraw(self, version: TodoVersion) -> bool:
        """Take back a version the session could not keep; True when the list changed."""
        before = self.current
        self._versions = [v for v in self._versions if v is not version]
        return self.current != before

    def rewind(self, to_seq: int) -> bool:
        """Go back to the list as it was before user message ``to_seq``; True when it changed."""
        before = self.current
        self._versions = todos_before(self._versions, to_seq)
        return self.current != before


def _line(todo: Todo) -> str:
    text = todo.content
    if todo.status == "in_progress" and todo.active_form:
        text = f"{todo.content} ({todo.active_form})"
    return f"{STATUS_MARKS[todo.status]} {text}"


def render_todos(todos: Sequence[Todo]) -> str:
    """The list as the model reads it back (``todo_write``'s result): one line per item."""
    if not todos:
        return "The todo list is now empty."
    done = sum(1 for t in todos if t.status == "completed")
    head = f"The todo list now ({done} of {len(todos)} completed):"
    return "\n".join([head, *(_line(t) for t in todos)])


def todos_note(todos: Sequence[Todo]) -> str | None:
    """The open items (pending and in progress), as a compaction carries them verbatim into
    the next request; None when nothing is open."""
    open_items = [t for t in todos if t.status != "completed"]
    if not open_items:
        return None
    lines = "\n".join(_line(t) for t in open_items)
    return (
        "[Open todos] Your todo list still has these items open (update it with todo_write "
        f"as you go):\n{lines}"
    )
