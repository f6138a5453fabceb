"""``pod history``, ``pod sessions show`` and ``export`` on a conversation that searched the
web: the search and its results a line each, the cited answer as one text with its ``[n]``,
the sources after it; a hostile title shown as its escapes, never a link or markup."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from cli.render import items_to_markdown, render_items
from tests.cli.web_session import BLOCKS, DOCS, EVIL_URL

ITEMS: list[dict[str, Any]] = [
    {
        "kind": "assistant",
        "seq": 2,
        "turn": 1,
        "blocks": BLOCKS,
        "stop_reason": "end_turn",
        "synthetic": False,
    }
]


def test_a_search_and_its_citations_are_printed_safely() -> None:
    console = Console(record=True, width=100, force_terminal=True)
    render_items(console, ITEMS)
    raw = console.export_text(styles=True, clear=False)
    text = " ".join(console.export_text().split())
    assert (
        '⌕ search: "python asyncio" → 2 results: asyncio — Asynchronous I/O (docs.python.org)'
        in text
    )
    assert "Per the docs, asyncio writes concurrent code [1][2]." in text
    assert f"[1] asyncio — Asynchronous I/O — {DOCS}" in text
    assert "[2] \\x1b]52;c;ZXZpbA==\\x07\\x1b]0;PWNED\\x07[bold red]Owned[/] AAA" in text
    assert f"{EVIL_URL} (not a web link)" in text
    # Only the console's own styles reach the terminal: no OSC from the title.
    assert "\x1b]" not in raw and "\x07" not in raw


def test_the_markdown_export_keeps_titles_from_becoming_links() -> None:
    exported = items_to_markdown(ITEMS)
    assert "Per the docs, asyncio writes concurrent code \\[1\\]\\[2\\]." in exported
    assert "javascript:alert\\(document.cookie\\) \\(not a web link\\)" in exported
    assert "](javascript" not in exported and "\x1b" not in exported
