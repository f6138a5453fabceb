"""Web text as every front-end shows it: escaped, one line, capped; links only for web URLs."""

from __future__ import annotations

import pytest

from cli.web_text import TITLE_CHARS, CitationNumbers, clean, link_url, result_text


def test_clean_escapes_folds_and_caps() -> None:
    assert clean("a\r\nb\tc\x1b[2J") == "a b c\\x1b[2J"
    assert clean("[bold]x[/bold]") == "[bold]x[/bold]"  # drawn as plain text by every caller
    worst = clean("\x1b" * 10_000)
    assert len(worst) == TITLE_CHARS and worst.endswith("…") and "\x1b" not in worst


@pytest.mark.parametrize(
    "url",
    [
        "javascript:alert(1)",
        "JaVaScRiPt:alert(1)",
        "data:text/html,<script>",
        "file:///etc/passwd",
        "http://",
        "https://exa mple.com/",
        "https://example.com/\x1b]8;;",
        "//example.com/x",
    ],
)
def test_only_web_urls_are_links(url: str) -> None:
    assert link_url(url) is None


def test_a_web_url_is_its_own_link() -> None:
    assert link_url("https://docs.python.org/3/") == "https://docs.python.org/3/"
    assert link_url("HTTP://example.com") == "HTTP://example.com"


def test_sources_keep_their_number_and_results_are_shortened() -> None:
    numbers = CitationNumbers()
    assert numbers.markers([("https://a.example", "A"), ("https://b.example", None)]) == " [1][2]"
    assert numbers.markers([("https://b.example", "B"), ("https://a.example", "A")]) == " [2][1]"
    assert numbers.lines() == ["[1] A — https://a.example", "[2] b.example — https://b.example"]
    assert result_text("web_search", [], None) == "no results"
    assert result_text("web_search", [("https://x.example/p", None)], None) == "1 result: x.example"
