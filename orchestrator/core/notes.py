"""Notes (``notify`` / ``pod_event``) waiting for the next round boundary, bounded.

A paused pod can be sent notes for hours; without a bound they grow memory and, once
delivered, the session and every later request. Repeats of the latest note are folded into it
with a count, and past :data:`MAX_NOTES` notes or :data:`MAX_NOTE_BYTES` of text a new note is
refused with :class:`NotesFull`, which the pod reports as a ``queue_full`` error.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from orchestrator.core.history import SystemMessage
from orchestrator.errors import PodRuntimeError

MAX_NOTES = 100
MAX_NOTE_BYTES = 256 * 1024


class NotesFull(PodRuntimeError):
    """The note queue is full; the message says how to empty it."""


@dataclass
class NoteQueue:
    """Notes kept until the machine injects them, in arrival order."""

    max_notes: int = MAX_NOTES
    max_bytes: int = MAX_NOTE_BYTES
    _notes: list[SystemMessage] = field(default_factory=list)
    _repeats: list[int] = field(default_factory=list)
    _bytes: int = 0

    def __len__(self) -> int:
        return len(self._notes)

    def check(self, note: SystemMessage) -> None:
        """Raise :class:`NotesFull` if ``note`` would not fit (repeats of the last always fit)."""
        if self._notes and self._notes[-1].text == note.text:
            return
        size = len(note.text.encode("utf-8", "replace"))
        if len(self._notes) >= self.max_notes or self._bytes + size > self.max_bytes:
            raise NotesFull(
                f"{len(self._notes)} notes ({self._bytes // 1024} KiB) are already waiting for "
                "the next round boundary; this one was refused. Resume or run to deliver them."
            )

    def add(self, note: SystemMessage) -> None:
        """Queue a note; a repeat of the latest one only counts up."""
        if self._notes and self._notes[-1].text == note.text:
            self._repeats[-1] += 1
            return
        self.check(note)
        self._notes.append(note)
        self._repeats.append(1)
        self._bytes += len(note.text.encode("utf-8", "replace"))

    def waiting(self) -> list[tuple[SystemMessage, int]]:
        """The queued notes with how many times each arrived, oldest first (none taken)."""
        return list(zip(self._notes, self._repeats, strict=True))

    def put_back(self, note: SystemMessage, repeats: int) -> None:
        """Queue a note again as :meth:`waiting` gave it (a reloaded pod): it was accepted
        once, so no bound refuses it now."""
        self._notes.append(note)
        self._repeats.append(max(1, repeats))
        self._bytes += len(note.text.encode("utf-8", "replace"))

    def take(self) -> list[SystemMessage]:
        """Every queued note (repeats folded into one with a count), emptying the queue."""
        notes = [
            note if n == 1 else replace(note, text=f"{note.text} (repeated {n} times)")
            for note, n in zip(self._notes, self._repeats, strict=True)
        ]
        self._notes, self._repeats, self._bytes = [], [], 0
        return notes
