"""The bounded note queue: repeats fold into a count, overflow is refused with a reason."""

from __future__ import annotations

import pytest

from orchestrator.core.history import SystemMessage
from orchestrator.core.notes import NoteQueue, NotesFull


def note(text: str) -> SystemMessage:
    return SystemMessage(text=text, origin="notify")


def test_repeats_fold_into_the_latest_note() -> None:
    queue = NoteQueue()
    for text in ["a", "b", "b", "b", "a"]:
        queue.add(note(text))
    assert [n.text for n in queue.take()] == ["a", "b (repeated 3 times)", "a"]
    assert len(queue) == 0 and queue.take() == []


def test_the_queue_refuses_past_its_bounds_but_takes_repeats() -> None:
    queue = NoteQueue(max_notes=3, max_bytes=1000)
    for text in ["1", "2", "3"]:
        queue.add(note(text))
    with pytest.raises(NotesFull, match=r"3 notes .* are already waiting"):
        queue.add(note("4"))
    queue.add(note("3"))  # a repeat of the latest still fits
    assert [n.text for n in queue.take()] == ["1", "2", "3 (repeated 2 times)"]
    big = NoteQueue(max_notes=10, max_bytes=10)
    big.add(note("x" * 8))
    with pytest.raises(NotesFull):
        big.check(note("y" * 8))
