"""The pod's todo list as part of its session: kept, recorded, rewound and announced.

:class:`TodoBoard` is the :class:`~orchestrator.capabilities.tools.todos.TodoKeeper` that
``todo_write`` writes through. Each write is a ``todos`` record queued at once and awaited
until it is synced, so the record is on disk before the call's result is committed (a crash
in between comes back with the list and closes the call with its result:
:func:`close_recorded_todo_calls`). The list in memory changes when the record is queued, in
the order of the records; a record the disk refuses is taken back, and the list with it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable

from orchestrator.adapters.session import SessionWriteError, TodoEntry, TodosRecord
from orchestrator.core.history import Item, ToolResult
from orchestrator.core.repair import pending_tool_calls
from orchestrator.core.todos import Todo, TodoList, TodoVersion, render_todos, todos_note
from orchestrator.protocol import TodoData, TodosData
from orchestrator.runtime.transcript import Transcript

__all__ = [
    "TodoBoard",
    "close_recorded_todo_calls",
    "record_of",
    "todo_data",
    "version_of",
]


def version_of(record: TodosRecord) -> TodoVersion:
    """A session record's list, as the pure list keeps it."""
    return TodoVersion(
        seq=record.seq,
        call_id=record.call_id,
        todos=tuple(
            Todo(content=e.content, status=e.status, active_form=e.active_form)
            for e in record.todos
        ),
    )


def record_of(version: TodoVersion) -> TodosRecord:
    """The session record of one version of the list."""
    return TodosRecord(
        seq=version.seq,
        call_id=version.call_id,
        todos=[
            TodoEntry(content=t.content, status=t.status, active_form=t.active_form)
            for t in version.todos
        ],
        at_ms=int(time.time() * 1000),
    )


def todo_data(todos: Iterable[Todo]) -> list[TodoData]:
    """The list as the protocol carries it (``status.todos``, the ``todos`` event)."""
    return [TodoData(content=t.content, status=t.status, active_form=t.active_form) for t in todos]


def close_recorded_todo_calls(
    items: list[Item], records: Iterable[TodosRecord]
) -> list[ToolResult]:
    """Results for ``todo_write`` calls whose record reached the disk but whose result did not
    (the pod died in between): the call did what it was asked, so it is closed with the
    result it would have had, and the list is the record's."""
    recorded = {r.call_id: r for r in records if r.call_id}
    results = []
    for call in pending_tool_calls(items):
        record = recorded.get(call.id)
        if record is None:
            continue
        todos = version_of(record).todos
        done = sum(1 for t in todos if t.status == "completed")
        results.append(
            ToolResult(
                call_id=call.id,
                summary=f"todo_write: {len(todos)} items, {done} completed",
                content=render_todos(todos),
            )
        )
    return results


class TodoBoard:
    """The todo list of one pod: the versions of its session, and the writes of its calls."""

    def __init__(self, transcript: Transcript, records: Iterable[TodosRecord] = ()) -> None:
        self.transcript = transcript
        self.list = TodoList(version_of(r) for r in records)

    @property
    def current(self) -> tuple[Todo, ...]:
        """The list now."""
        return self.list.current

    def data(self) -> list[TodoData]:
        """The list now, for ``status``."""
        return todo_data(self.list.current)

    def note(self) -> str | None:
        """The open items as a compaction carries them (None: nothing open)."""
        return todos_note(self.list.current)

    async def write(self, call_id: str, todos: tuple[Todo, ...]) -> None:
        """Make ``todos`` the list: its record synced, then clients told (raises
        :class:`SessionWriteError`, the list unchanged, when the disk refuses the record)."""
        version = TodoVersion(seq=self.transcript.history.next_seq, todos=todos, call_id=call_id)
        self.list.replace(version)  # now: concurrent writes keep the order of their records
        try:
            await self.transcript.persist(record_of(version))
        except SessionWriteError:
            self.list.withdraw(version)
            raise
        except asyncio.CancelledError:
            # Interrupted while it was being synced: the record is queued and lands all the
            # same, so the list stands; the event waits behind the record.
            self._announce()
            raise
        self._announce()

    def rewind(self, to_seq: int) -> None:
        """The conversation went back to before user message ``to_seq``: so does the list."""
        if self.list.rewind(to_seq):
            self._announce()

    def _announce(self) -> None:
        self.transcript.emit("todos", TodosData(todos=self.data()))
