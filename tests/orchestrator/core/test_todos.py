"""The todo list's pure part: versions for rewind, the text the model reads back, and the note
a compaction carries verbatim."""

from __future__ import annotations

from orchestrator.core.history import Compaction
from orchestrator.core.todos import Todo, TodoList, TodoVersion, render_todos, todos_note

PLAN = (Todo("Run the tests", "in_progress", "Running the tests"), Todo("Fix the bug"))
DONE = (Todo("Run the tests", "completed"), Todo("Fix the bug", "completed"))


def test_the_model_reads_back_the_whole_list() -> None:
    assert render_todos(PLAN) == (
        "The todo list now (0 of 2 completed):\n"
        "[>] Run the tests (Running the tests)\n"
        "[ ] Fix the bug"
    )
    assert render_todos(()) == "The todo list is now empty."


def test_the_note_keeps_only_the_open_items() -> None:
    mixed = (Todo("Read the code", "completed"), *PLAN)
    note = todos_note(mixed)
    assert note is not None
    assert "Read the code" not in note
    assert note.endswith("[>] Run the tests (Running the tests)\n[ ] Fix the bug")
    assert todos_note(DONE) is None and todos_note(()) is None


def test_a_compaction_carries_the_note_verbatim_after_its_summary() -> None:
    note = todos_note(PLAN)
    assert note is not None
    compaction = Compaction(
        summary="We were fixing the parser.", first_seq=1, last_seq=5, tokens_before=9,
        tokens_after=3, todos=note,
    )  # fmt: skip
    assert note in compaction.text
    assert compaction.text.index("fixing the parser") < compaction.text.index(note)
    without = Compaction(summary="s", first_seq=1, last_seq=2, tokens_before=2, tokens_after=1)
    assert "todos" not in without.text.lower()


def test_versions_rewind_to_before_a_prompt_and_withdraw() -> None:
    first = TodoVersion(seq=3, todos=PLAN, call_id="a")
    second = TodoVersion(seq=7, todos=DONE, call_id="b")
    todos = TodoList([first, second])
    assert todos.current == DONE
    assert not todos.rewind(7)  # written before item 7 was committed: kept
    assert todos.rewind(6) and todos.current == PLAN
    assert todos.rewind(2) and not todos.current
    todos.replace(first)
    later = TodoVersion(seq=9, todos=DONE, call_id="c")
    todos.replace(later)
    assert todos.withdraw(later) and todos.current == PLAN
    assert not todos.withdraw(later)
