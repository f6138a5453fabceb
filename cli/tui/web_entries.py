"""The API's web search and web fetch in the conversation: a card per call, numbered sources
after a message that cites them.

A call's card shows the query (or URL) as soon as the call starts, then the result's titles
and hosts, or its error in words; expanded, every source on a line of its own. A message
whose text cites sources gets ``[1]``, ``[2]`` … after the text each citation belongs to, and
a :class:`SourcesEntry` under it listing them. Every word of it is a web page's or the model's,
so it is cleaned by :mod:`cli.web_text` (escapes shown, one line, capped) and drawn as plain
text, never markup; a source that is no ``http``/``https`` URL is never made a link.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cli.cited_stream import citation_pairs
from cli.tui.titles import NOT_KEPT, TitleParts
from cli.web_text import CitationNumbers, ShownSource, call_text, error_text, result_text
from orchestrator.core.history import ServerToolResultBlock, TextBlock
from orchestrator.core.server_tools import summarize_result

__all__ = ["CitedText", "ServerToolEntry", "SourcesEntry", "marked"]


@dataclass
class ServerToolEntry:
    """One web search or web fetch the API ran: what it asked, then what it found."""

    id: str
    name: str
    input: dict[str, Any] = field(default_factory=dict)
    sources: list[tuple[object, object]] = field(default_factory=list)
    """``(url, title)`` of each page the result lists."""
    error_code: str | None = None
    done: bool = False
    """The result arrived."""
    not_kept: bool = False
    """Streamed in a response that was cut off: the history does not hold it."""

    def answer(self, sources: list[tuple[object, object]], error_code: str | None) -> None:
        """Take the call's result."""
        self.sources = sources
        self.error_code = error_code
        self.done = True

    def take_block(self, block: ServerToolResultBlock) -> None:
        """Take the result as the history holds it (read by the pure reader)."""
        summary = summarize_result(block)
        self.answer([(s.url, s.title) for s in summary.sources], summary.error_code)

    @property
    def title_parts(self) -> TitleParts:
        """``⌕ search: "query" → 5 results: Title (host), …``: the list of pages is cut first
        when narrow, so the query and the count (or the error) stay in view."""
        verb, _, what = call_text(self.name, self.input).partition(": ")
        # A result whose call this client never saw (attached later) has no query to show.
        head = f"⌕ {verb}: {what}" if self.input else f"⌕ {verb}"
        if self.not_kept:
            return TitleParts(head, "", f" [{NOT_KEPT}]")
        if not self.done:
            return TitleParts(head, "", " …")
        outcome = result_text(self.name, self.sources, self.error_code)
        if self.error_code:
            return TitleParts(f"{head} → ", "", outcome)
        count, found, listing = outcome.partition(": ")
        if not found:
            return TitleParts(f"{head} → ", outcome, "")
        return TitleParts(f"{head} → {count}: ", listing, "")

    @property
    def title(self) -> str:
        """The card's whole one-line title."""
        return str(self.title_parts)

    @property
    def body(self) -> str:
        """Expanded: what was asked, then each source on a line, or the error in words."""
        lines = [call_text(self.name, self.input)] if self.input else []
        if not self.done:
            lines.append("(running on the API's side)")
        elif self.error_code:
            lines.append(error_text(self.name, self.error_code))
        elif not self.sources:
            lines.append("(no results)")
        lines += [ShownSource.of(url, title).line() for url, title in self.sources]
        return "\n".join(lines)


@dataclass
class SourcesEntry:
    """The sources a message cites, numbered as its ``[n]`` markers are."""

    lines: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        """``Sources:`` then ``[1] Title — https://…`` a line each."""
        return "\n".join(["Sources:", *self.lines])


def marked(text: str, markers: str) -> str:
    """A block's text with its markers, escaped so Markdown shows ``[1]`` as written (never
    a link to a reference the text might define)."""
    return text + markers.replace("[", "\\[").replace("]", "\\]")


@dataclass
class CitedText:
    """The citation numbers of the message being committed (or replayed), and where its
    :class:`SourcesEntry` is, once it has one."""

    seq: int | None = None
    numbers: CitationNumbers = field(default_factory=CitationNumbers)
    sources_at: int | None = None

    def markers(self, seq: int | None, citations: list[Any] | None) -> str:
        """The ``[n]`` markers of a block of message ``seq`` (a new message restarts at 1)."""
        if seq != self.seq or seq is None:
            self.seq, self.numbers, self.sources_at = seq, CitationNumbers(), None
        return self.numbers.markers(citation_pairs(citations))

    def block_markers(self, seq: int | None, block: TextBlock) -> str:
        """The markers of a text block in the history."""
        return self.markers(seq, block.citations)

    def sources(self) -> SourcesEntry | None:
        """The message's sources so far; None while it cites nothing."""
        lines = self.numbers.lines()
        return SourcesEntry(lines) if lines else None
