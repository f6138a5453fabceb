"""`pod run` prints the todo list each time the model changes it, as text a terminal shows
and never obeys; `pod status` says where the list stands."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from cli.run_output import Printer
from cli.todo_text import todo_line, todo_lines
from tests.cli.helpers import pod, scripted_pod

HOSTILE = "steal\x1b]52;c;ZWNobyBoaQ==\x07 it\r[x] all done\nfake line"


def test_an_item_is_one_line_with_its_controls_escaped() -> None:
    line = todo_line({"content": HOSTILE, "status": "pending"})
    assert "\x1b" not in line and "\r" not in line and "\n" not in line and "\x07" not in line
    assert line.startswith("○ steal\\x1b]52;c;") and line.endswith("fake line")
    # In progress, the item reads as it is being done.
    doing = {"content": "Run the tests", "status": "in_progress", "active_form": "Running"}
    assert todo_line(doing) == "▶ Running"
    assert todo_lines([]) == ["todos: the list is empty"]


def test_the_printer_prints_the_whole_list_on_stderr() -> None:
    out, err = io.StringIO(), io.StringIO()
    printer = Printer(out, err)
    todos = [
        {"content": "write the test", "status": "completed", "active_form": None},
        {"content": "fix the bug", "status": "in_progress", "active_form": "Fixing the bug"},
        {"content": HOSTILE, "status": "pending", "active_form": None},
    ]
    printer.event("todos", {"todos": todos})
    assert out.getvalue() == ""
    lines = err.getvalue().splitlines()
    assert lines[:3] == ["☰ todos 1/3 done", "  ✓ write the test", "  ▶ Fixing the bug"]
    assert len(lines) == 4 and "\x1b" not in err.getvalue()


def test_pod_run_prints_the_changes_and_pod_status_the_list(
    env: dict[str, str], workspace: Path
) -> None:
    def write(*items: tuple[str, str]) -> dict[str, Any]:
        todos = [{"content": c, "status": s} for c, s in items]
        return {"name": "todo_write", "input": {"todos": todos}}

    replies: list[dict[str, Any]] = [
        {"text": "Planning.", "tool_calls": [write(("test", "in_progress"), ("fix", "pending"))]},
        {"text": "Working.", "tool_calls": [write(("test", "completed"), ("fix", "in_progress"))]},
        {"text": "Done."},
    ]
    with scripted_pod(env, workspace, replies) as socket:
        done = pod(env, "run", "go", "--socket", str(socket))
        assert done.returncode == 0, done.stderr
        lines = done.stderr.splitlines()
        assert "☰ todos 0/2 done" in lines, done.stderr
        first = lines.index("☰ todos 0/2 done")
        assert lines[first + 1 : first + 3] == ["  ▶ test", "  ○ fix"]
        second = lines.index("☰ todos 1/2 done")
        assert lines[second + 1 : second + 3] == ["  ✓ test", "  ▶ fix"]
        status = pod(env, "status", "--socket", str(socket))
        assert "todos 1/2 done · now: fix" in status.stdout.splitlines()
        data = json.loads(pod(env, "status", "--socket", str(socket), "--json").stdout)
        assert [(t["content"], t["status"]) for t in data["todos"]] == [
            ("test", "completed"),
            ("fix", "in_progress"),
        ]
