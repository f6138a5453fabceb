"""An answer written as it streams, with each citation's ``[n]`` after the text it cites.

The API sends a text block's citations as it starts the block (``citation`` events), and a
client learns where the block ends only when the message is committed (``text_done``, one
per block, with the block's citations). A stream that writes text as it comes (``pod run``'s
stdout, an ACP editor's message) cannot go back to put ``[1]`` after a sentence, so from a
message's first citation on its text is held, and written from the committed blocks: each
block's text, then its markers; the list of sources follows the message. Text before the
first citation streams as before; a message that cites nothing is written exactly as before.
Pure: the callers write what it returns.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from cli.terminal_text import visible
from cli.web_text import CitationNumbers, ShownSource

__all__ = ["CitedStream", "citation_pairs"]


def citation_pairs(citations: Iterable[Any] | None) -> list[tuple[object, object]]:
    """``(url, title)`` of each citation: ``text_done``'s (dicts or ``CitationData``) or the
    history's (the API's shape: ``url``/``title``, or a fetched document's
    ``document_title``)."""
    pairs: list[tuple[object, object]] = []
    for citation in citations or []:
        if isinstance(citation, dict):
            title = citation.get("title") or citation.get("document_title")
            pairs.append((citation.get("url"), title))
        else:  # the protocol's CitationData
            pairs.append((getattr(citation, "url", None), getattr(citation, "title", None)))
    return pairs


@dataclass
class CitedStream:
    """One run's answer text, message by message (see the module's docstring)."""

    numbers: CitationNumbers = field(default_factory=CitationNumbers)
    holding: bool = False
    """A citation came: the rest of the message waits for its commit."""
    held: str = ""
    """Text streamed while holding (written only if the message is never committed)."""
    written: str = ""
    """Text written as it streamed that no committed block has matched yet."""
    committing: bool = False
    """Committed blocks of a citing message were written; its sources are still to come."""
    seq: int | None = None
    """That message's ``seq``."""

    @property
    def citing(self) -> bool:
        """This message cites (its text is written from the commit)."""
        return self.holding or self.committing or bool(self.numbers.sources)

    def ends_message(self, name: str, data: dict[str, Any]) -> bool:
        """Whether this event comes after the citing message's commit (its sources are due):
        anything but the commit's own ``text_done`` and ``tool_call_done``."""
        if not self.committing:
            return False
        return name not in ("text_done", "tool_call_done") or data.get("seq") != self.seq

    def delta(self, text: str, *, escape: bool = True) -> str:
        """Streamed text: what to write now ("" while holding), made terminal-safe unless
        ``escape`` is False (an editor gets the text as it is)."""
        if self.holding:
            self.held += text
            return ""
        self.written += text
        return visible(text) if escape else text

    def citation(self) -> None:
        """The text being streamed cites a source: hold the rest of the message."""
        self.holding = True

    def done(
        self,
        text: str,
        citations: Iterable[Any] | None,
        *,
        escape: bool = True,
        seq: int | None = None,
    ) -> str:
        """A committed block (of message ``seq``): what of it was not written yet, then its
        ``[n]`` markers."""
        self.seq = seq
        same = 0
        limit = min(len(text), len(self.written))
        while same < limit and text[same] == self.written[same]:
            same += 1
        self.written = self.written[same:] if same == len(text) else ""
        self.committing = True
        rest = visible(text[same:]) if escape else text[same:]
        return rest + self.numbers_of(citations)

    def numbers_of(self, citations: Iterable[Any] | None) -> str:
        """`` [1][2]``: the markers of a block's citations, numbered in this message."""
        return self.numbers.markers(citation_pairs(citations))

    def sources(self) -> list[ShownSource]:
        """The message is over: its numbered sources (``[1]`` first); the next one starts."""
        sources = self.numbers.sources
        self.numbers = CitationNumbers()
        self.holding = self.committing = False
        self.held = self.written = ""
        return sources

    def unkept(self, *, escape: bool = True) -> str:
        """The run ended before the message was committed: the held text (terminal-safe
        unless ``escape`` is False)."""
        held, self.held = self.held, ""
        return visible(held) if escape else held
