"""The todo panel: the pure rows at 80 columns and less, and the panel in a UI attached to a
real pod whose model writes its list (opened and closed with ``/todos``)."""

from __future__ import annotations

from pathlib import Path

from rich.cells import cell_len

from cli.tui.model import ChatModel
from cli.tui.todo_panel import SHOWN_ITEMS, todo_panel_lines
from orchestrator.protocol import TodoData, TodosData
from orchestrator.serving.client import PodEvent
from tests.cli.tui.conftest import attach
from tests.e2e.harness import ScriptedReply, ScriptedToolCall, running_pod

HOSTILE = "rm -rf \x1b[2J\x1b]0;owned\x07 all\nfake ✓ line " + "long " * 40


def _todo(content: str, status: str = "pending", active: str | None = None) -> TodoData:
    return TodoData(content=content, status=status, active_form=active)  # type: ignore[arg-type]


def test_an_empty_list_shows_nothing() -> None:
    assert todo_panel_lines([]) == []


def test_rows_fit_the_width_and_the_models_text_is_never_obeyed() -> None:
    todos = [
        _todo("Read the code", "completed"),
        _todo("Fix the parser", "in_progress", "Fixing the parser"),
        _todo(HOSTILE),
    ]
    for width in (80, 40, 20):
        rows = todo_panel_lines(todos, width=width)
        assert len(rows) == 4
        assert all(cell_len(row) <= width for row in rows)
        text = "\n".join(rows)
        assert "\x1b" not in text and "\x07" not in text
    rows = todo_panel_lines(todos, width=80)
    assert rows[0] == "☰ todos 1/3 done (/todos hides)"
    assert rows[1:3] == ["  ✓ Read the code", "  ▶ Fixing the parser"]
    assert rows[3].startswith("  ○ rm -rf \\x1b[2J\\x1b]0;owned\\x07 all fake ✓ line")
    assert rows[3].endswith("…")  # cut to 80 cells, on one line
    closed = todo_panel_lines(todos, expanded=False, width=80)
    assert closed == ["☰ todos 1/3 done · ▶ Fixing the parser (/todos shows)"]


def test_a_long_list_shows_the_items_around_the_one_in_progress() -> None:
    todos = [_todo(f"step {n}", "completed") for n in range(10)]
    todos += [_todo("step 10", "in_progress")] + [_todo(f"step {n}") for n in range(11, 20)]
    rows = todo_panel_lines(todos, width=80)
    assert rows[1] == "  … 9 earlier"
    assert rows[2:4] == ["  ✓ step 9", "  ▶ step 10"]
    assert len([r for r in rows if r.startswith("  ") and "…" not in r]) == SHOWN_ITEMS
    assert rows[-1] == f"  … {20 - 9 - SHOWN_ITEMS} more"


def test_the_todos_event_replaces_the_list_the_model_keeps() -> None:
    model = ChatModel()
    event = TodosData(todos=[_todo("a", "in_progress")])
    assert model.apply(PodEvent("todos", event.model_dump())) == []  # no conversation entry
    assert [t.content for t in model.pod.todos] == ["a"]
    model.apply(PodEvent("todos", TodosData(todos=[]).model_dump()))
    assert model.pod.todos == []


async def test_the_panel_follows_the_models_list_and_todos_closes_it(
    workspace: Path, short_dir: Path
) -> None:
    plan = [
        {"content": "Read the code", "status": "completed"},
        {"content": "Fix the parser", "status": "in_progress", "activeForm": "Fixing it"},
        {"content": HOSTILE, "status": "pending"},
    ]
    call = ScriptedToolCall(name="todo_write", input={"todos": plan})
    replies = [ScriptedReply(text="Planning.", tool_calls=[call]), ScriptedReply(text="Done.")]
    async with running_pod(workspace, short_dir, replies=replies) as pod, attach(pod) as s:
        assert not s.app.todo_panel.plain  # no list yet: no panel
        await s.probe.send("run", {"input": "fix it"})
        await s.until(lambda: "▶ Fixing it" in s.screen, "the panel drawn")
        screen = s.screen
        assert "▶ Fixing it" in screen and "✓ Read the code" in screen
        assert "\x1b" not in s.app.todo_panel.plain
        assert all(cell_len(row) <= 80 for row in screen.splitlines())
        await s.until(lambda: "Done." in s.screen, "the turn's end")
        await s.ui_status("idle")  # a notice made while running would go as the turn ends
        s.app.editor.load_text("/todos")
        await s.pilot.press("enter")
        await s.until(lambda: s.app.todo_panel.plain.count("\n") == 0, "closed")
        assert "· ▶ Fixing it (/todos shows)" in s.app.todo_panel.plain
        assert "Todo panel closed" in s.notice
