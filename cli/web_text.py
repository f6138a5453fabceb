"""The API's web search and web fetch as people read them, in every front-end alike.

Queries, page titles, URLs and cited text are a web page's or the model's words: a title can
hold an escape sequence that writes the clipboard (``ESC]52``), Rich markup (``[bold]``), a
link to ``javascript:``, or ten thousand characters. Everything here is cleaned once, the
same way for the chat UI, ``pod run`` and ACP: control characters shown as their escapes
(:func:`cli.terminal_text.visible`), line breaks folded to spaces, the length capped; only an
``http``/``https`` URL is ever offered as a link. Callers still draw the result as plain text
(never markup). Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from cli.terminal_text import visible

__all__ = [
    "ERROR_WORDS",
    "TITLE_CHARS",
    "URL_CHARS",
    "CitationNumbers",
    "ShownSource",
    "call_text",
    "clean",
    "error_text",
    "link_url",
    "plain_markdown",
    "result_text",
    "shown_host",
    "verb",
]

TITLE_CHARS = 120
"""A title or query is cut to this many characters (a page may send ten thousand)."""
URL_CHARS = 200
"""A URL is cut to this many characters when shown (its link, when offered, is whole)."""

ERROR_WORDS = {
    "max_uses_exceeded": "the search limit for this request was reached",
    "too_many_requests": "too many requests (rate limited)",
    "query_too_long": "the query is too long",
    "request_too_large": "the request is too large",
    "invalid_tool_input": "the model's input was invalid",
    "unavailable": "the service is unavailable",
    "url_too_long": "the URL is too long",
    "url_not_allowed": "the URL is not allowed",
    "url_not_in_prior_context": "the URL was not in the conversation before",
    "url_not_accessible": "the page could not be reached",
    "unsupported_content_type": "the page's content type is not supported",
    "content_too_large": "the page is too large",
}
"""The API's error codes of web search and web fetch, in words."""


def clean(text: object, limit: int = TITLE_CHARS) -> str:
    """Web or model text fit for one line: control characters escaped, line breaks and runs
    of blanks folded to one space, cut to ``limit`` characters (``…`` says it was)."""
    # Escaped first, then cut: a title of escape sequences stays within the limit too.
    folded = " ".join(visible(str(text)).split())
    if len(folded) > limit:
        folded = folded[: max(limit - 1, 0)] + "…"
    return folded


_MARKDOWN = re.compile(r"([\\`*_{}\[\]()<>#+!|~])")


def plain_markdown(text: str) -> str:
    """Text placed where Markdown is rendered (an editor's message, a transcript), shown as
    written: a title cannot become a link, emphasis or a heading."""
    return _MARKDOWN.sub(r"\\\1", text)


def link_url(url: object) -> str | None:
    """The URL, when it is one a person may open (``http``/``https`` with a host); else None:
    a ``javascript:``, ``data:`` or ``file:`` URL is never offered as a link."""
    if not isinstance(url, str) or any(c.isspace() or ord(c) < 0x20 for c in url):
        return None
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return None
    return url


def shown_host(url: object) -> str:
    """The host a URL names (``docs.python.org``), cleaned; "" when it has none."""
    try:
        host = urlsplit(str(url)).hostname or ""
    except ValueError:
        host = ""
    return clean(host, 80)


def verb(name: str) -> str:
    """``search`` or ``fetch`` for the tool's name (another name stays itself)."""
    return {"web_search": "search", "web_fetch": "fetch"}.get(name, clean(name, 40))


def call_text(name: str, tool_input: dict[str, Any]) -> str:
    """What a call asks: ``search: "python asyncio"`` or ``fetch: https://…``."""
    if name == "web_search":
        return f'search: "{clean(tool_input.get("query", ""))}"'
    if name == "web_fetch":
        return f"fetch: {clean(tool_input.get('url', ''), URL_CHARS)}"
    return f"{verb(name)}: {clean(tool_input, URL_CHARS)}"


def error_text(name: str, code: str) -> str:
    """``search failed: too many requests (rate limited) [too_many_requests]``."""
    words = ERROR_WORDS.get(code, "the API reported an error")
    return f"{verb(name)} failed: {words} [{clean(code, 40)}]"


@dataclass(frozen=True)
class ShownSource:
    """A source as shown: its cleaned title (or host), cleaned URL and, if safe, its link."""

    title: str
    url: str
    link: str | None

    @classmethod
    def of(cls, url: object, title: object) -> ShownSource:
        """Clean a source as the API (or a web page) gave it."""
        shown_url = clean(url or "", URL_CHARS)
        shown_title = clean(title, TITLE_CHARS) if title else shown_host(url) or shown_url
        return cls(shown_title, shown_url, link_url(url))

    def line(self) -> str:
        """``Title — https://…`` (a URL that is no web link says so)."""
        mark = "" if self.link or not self.url else " (not a web link)"
        return f"{self.title} — {self.url}{mark}" if self.url else self.title


def result_text(
    name: str, sources: Sequence[tuple[object, object]], error_code: str | None, shown: int = 3
) -> str:
    """A result on one line: ``5 results: Title (host), Title (host), … +2``, the page a
    fetch read, or the error in words."""
    if error_code:
        return error_text(name, error_code)
    if not sources:
        return "no results" if name == "web_search" else "nothing read"
    parts = []
    for url, title in sources[:shown]:
        host = shown_host(url)
        label = clean(title, 60) if title else host or clean(url, 60)
        parts.append(f"{label} ({host})" if title and host else label)
    more = f", … +{len(sources) - shown}" if len(sources) > shown else ""
    if name == "web_search":
        count = "1 result" if len(sources) == 1 else f"{len(sources)} results"
        return f"{count}: {', '.join(parts)}{more}"
    return f"read {', '.join(parts)}{more}"


@dataclass
class CitationNumbers:
    """The numbers of one message's citations: ``[1]``, ``[2]`` … in order of first citing,
    the same source (by URL, else by title) keeping its number."""

    sources: list[ShownSource] = field(default_factory=list)
    _keys: dict[str, int] = field(default_factory=dict)

    def number(self, url: object, title: object) -> int:
        """The number of a source, given one the first time it is cited."""
        key = str(url or title or "")
        if key not in self._keys:
            self.sources.append(ShownSource.of(url, title))
            self._keys[key] = len(self.sources)
        return self._keys[key]

    def markers(self, citations: Iterable[tuple[object, object]]) -> str:
        """`` [1][2]`` for a text's citations (``url, title`` pairs); "" for none."""
        numbers = list(dict.fromkeys(self.number(url, title) for url, title in citations))
        return " " + "".join(f"[{n}]" for n in numbers) if numbers else ""

    def lines(self) -> list[str]:
        """``[1] Title — https://…`` for each source, in number order."""
        return [f"[{n}] {source.line()}" for n, source in enumerate(self.sources, start=1)]
