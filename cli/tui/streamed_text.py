"""The model's streamed answer text and its commit, apart from :mod:`cli.tui.model` (whose
class builds on this one): deltas grow an entry, each committed block (``text_done``)
confirms the oldest streamed text or continues the entry of the block before it, with the
``[n]`` of its citations and the message's sources under it. Also the plain-text digest of
the entries tests compare.
"""

from __future__ import annotations

from cli.tui.entries import (
    NOT_KEPT,
    AlertEntry,
    ApprovalEntry,
    AssistantEntry,
    Change,
    ElicitationEntry,
    Entry,
    NoteEntry,
    ThinkingEntry,
    ToolEntry,
    UserEntry,
)
from cli.tui.input import segment_text
from cli.tui.web_entries import CitedText, ServerToolEntry, SourcesEntry, marked
from orchestrator.protocol import TextData

__all__ = ["StreamedText", "transcript"]


class StreamedText:
    """The answer's text as it streams and is committed (a base of ``ChatModel``)."""

    def __init__(self) -> None:
        self.entries: list[Entry] = []
        self._stream: int | None = None
        self._unconfirmed: list[int] = []
        self._cited = CitedText()
        self._joining: int | None = None
        """The entry the next committed block of the same message continues (same text)."""
        self._left = ""
        """Streamed text of that entry no committed block has matched yet."""

    def _add(self, entry: Entry) -> Change:
        self.entries.append(entry)
        return Change("added", len(self.entries) - 1)

    def _text_delta(self, delta: str) -> list[Change]:
        if self._stream is None:
            self._stream = len(self.entries)
            self._unconfirmed.append(self._stream)
            return [self._add(AssistantEntry(text=delta, streaming=True))]
        entry = self.entries[self._stream]
        assert isinstance(entry, AssistantEntry)
        entry.text += delta
        return [Change("appended", self._stream, delta)]

    def _text_done(self, done: TextData) -> list[Change]:
        """A committed text block: it confirms the oldest streamed text, or continues the
        entry of the block before it (a cited answer comes as many blocks, one text)."""
        same_message = done.seq is not None and done.seq == self._cited.seq
        text = marked(done.text, self._cited.markers(done.seq, done.citations))
        if (
            same_message
            and self._joining is not None
            and (self._left or (not self._unconfirmed and self._drawn_last(self._joining)))
        ):
            index = self._joining
            entry = self.entries[index]
            assert isinstance(entry, AssistantEntry)
        elif not self._unconfirmed:
            self._left, self._joining = "", len(self.entries)
            return [self._add(AssistantEntry(text=text)), *self._sources()]
        else:
            index = self._joining = self._unconfirmed.pop(0)
            if index == self._stream:
                self._stream = None
            entry = self.entries[index]
            assert isinstance(entry, AssistantEntry)
            self._left, entry.text = entry.text, ""
            entry.streaming = False
        before = entry.text + self._left
        entry.text += text
        left, self._left = self._left, ""
        if left.startswith(done.text):
            self._left = left[len(done.text) :]  # streamed text of later blocks follows
        changed = before != entry.text + self._left
        return [Change("updated", index, "replace" if changed else ""), *self._sources()]

    def _drawn_last(self, index: int) -> bool:
        """Nothing but the message's sources was drawn after entry ``index``: the next
        block of its message continues it."""
        return all(isinstance(e, SourcesEntry) for e in self.entries[index + 1 :])

    def _sources(self) -> list[Change]:
        """The sources of the message being committed, under it (drawn once it cites)."""
        sources = self._cited.sources()
        if sources is None:
            return []
        at = self._cited.sources_at
        if at is None:
            self._cited.sources_at = len(self.entries)
            return [self._add(sources)]
        self.entries[at] = sources
        return [Change("updated", at)]


def transcript(entries: list[Entry]) -> list[str]:
    """A plain-text digest of the entries (for tests and debugging)."""
    out: list[str] = []
    for entry in entries:
        if isinstance(entry, UserEntry):
            out.append("user: " + "".join(segment_text(s) for s in entry.segments))
        elif isinstance(entry, AssistantEntry):
            mark = f" [{NOT_KEPT}]" if entry.interrupted else ""
            out.append("assistant: " + entry.text + mark)
        elif isinstance(entry, ThinkingEntry):
            out.append("thinking: " + entry.text)
        elif isinstance(entry, ToolEntry | ServerToolEntry):
            out.append(("tool: " if isinstance(entry, ToolEntry) else "web: ") + entry.title)
        elif isinstance(entry, SourcesEntry):
            out.append("sources: " + " | ".join(entry.lines))
        elif isinstance(entry, NoteEntry):
            out.append(f"note[{entry.origin}]: {entry.text}")
        elif isinstance(entry, AlertEntry):
            out.append(f"alert[{entry.level}]: {entry.message}")
        elif isinstance(entry, ApprovalEntry):
            out.append(f"approval[{entry.decision}]: {entry.summary}")
        elif isinstance(entry, ElicitationEntry):
            out.append(f"input[{entry.action}]: {entry.title}")
        else:
            out.append("info: " + entry.text)
    return out
