"""The pod's todo list as terminal text (``pod run``, ``pod status``, the terminal UI's panel).

Each item is the model's text: it is shown on one line (a line break in it could otherwise
pass for another item), with its control characters escaped (:mod:`cli.terminal_text`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from cli.terminal_text import visible

__all__ = ["MARKS", "todo_counts", "todo_line", "todo_lines", "todo_text"]

MARKS: dict[str, str] = {"completed": "✓", "in_progress": "▶", "pending": "○"}
"""How each status is marked (anything else: ``?``)."""


def todo_text(item: Mapping[str, Any]) -> str:
    """An item's words, one line, terminal-safe: while in progress, its ``active_form``."""
    words = item.get("active_form") if item.get("status") == "in_progress" else None
    text = str(words or item.get("content") or "")
    return visible(" ".join(text.split()))


def todo_line(item: Mapping[str, Any]) -> str:
    """``▶ Running the tests``: the item's mark and words."""
    return f"{MARKS.get(str(item.get('status')), '?')} {todo_text(item)}"


def todo_counts(todos: Iterable[Mapping[str, Any]]) -> tuple[int, int]:
    """(completed, all)."""
    listed = list(todos)
    return sum(1 for t in listed if t.get("status") == "completed"), len(listed)


def todo_lines(todos: Iterable[Mapping[str, Any]], indent: str = "  ") -> list[str]:
    """A heading (``todos 1/3 done``) and a line per item; an empty list says so."""
    listed = list(todos)
    if not listed:
        return ["todos: the list is empty"]
    done, count = todo_counts(listed)
    return [f"todos {done}/{count} done", *(indent + todo_line(t) for t in listed)]
