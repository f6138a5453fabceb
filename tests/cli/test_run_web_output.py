"""``pod run``'s lines for the API's web search and fetch, and its citations: a line per
search or fetch and per result, ``[n]`` after the text each citation belongs to, the sources
after the answer; a web page's title or a model's query never reaches the terminal raw."""

from __future__ import annotations

import io
from typing import Any

from cli.run_output import NOT_KEPT, Printer

CITE_1 = {
    "url": "https://docs.python.org/3/library/asyncio.html",
    "title": "asyncio",
    "cited_text": "c",
}
CITE_2 = {"url": "https://peps.python.org/pep-3156/", "title": "PEP 3156", "cited_text": "d"}


Events = list[tuple[str, dict[str, Any]]]


def _run(events: Events, result: str = "finished") -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    printer = Printer(out, err)
    for name, data in events:
        printer.event(name, data)
    printer.end(result)
    return out.getvalue(), err.getvalue()


def _search(
    sources: list[dict[str, Any]], error: str | None = None
) -> list[tuple[str, dict[str, Any]]]:
    return [
        (
            "server_tool_call",
            {"id": "srvtoolu_1", "name": "web_search", "input": {"query": "py async"}},
        ),
        (
            "server_tool_result",
            {"id": "srvtoolu_1", "name": "web_search", "sources": sources, "error_code": error},
        ),
    ]


def test_a_search_and_its_results_are_a_line_each() -> None:
    sources = [{"url": f"https://site{i}.example/p", "title": f"Page {i}"} for i in range(5)]
    _, err = _run(_search(sources))
    lines = err.splitlines()
    assert lines[0] == '⌕ search: "py async"'
    assert lines[1].startswith("  → 5 results: Page 0 (site0.example), Page 1 (site1.example)")
    assert lines[1].endswith(", … +2")


def test_a_failed_search_says_its_error_in_words() -> None:
    _, err = _run(_search([], "too_many_requests"))
    assert "  ✗ search failed: too many requests (rate limited) [too_many_requests]" in err


def test_a_fetch_line_names_the_url_and_the_page_read() -> None:
    events: Events = [
        (
            "server_tool_call",
            {"id": "srvtoolu_2", "name": "web_fetch", "input": {"url": "https://example.com/a"}},
        ),
        (
            "server_tool_result",
            {
                "id": "srvtoolu_2",
                "name": "web_fetch",
                "sources": [{"url": "https://example.com/a", "title": "A page"}],
                "error_code": None,
            },
        ),
    ]
    _, err = _run(events)
    assert err.splitlines() == ["⌕ fetch: https://example.com/a", "  → read A page (example.com)"]


def _cited_message() -> list[tuple[str, dict[str, Any]]]:
    # As the API streams it: a block's citations come as the block starts, before its text.
    return [
        ("text_delta", {"text": "Let me look. "}),
        *_search([{"url": CITE_1["url"], "title": "asyncio"}]),
        ("text_delta", {"text": "Based on it, "}),
        ("citation", CITE_1),
        ("text_delta", {"text": "asyncio writes concurrent code"}),
        ("text_delta", {"text": ", and "}),
        ("citation", CITE_2),
        ("citation", CITE_1),
        ("text_delta", {"text": "it came with PEP 3156."}),
        ("usage", {"input_tokens": 1, "output_tokens": 1, "web_search_requests": 1}),
        ("text_done", {"text": "Let me look. ", "seq": 4}),
        ("text_done", {"text": "Based on it, ", "seq": 4}),
        ("text_done", {"text": "asyncio writes concurrent code", "seq": 4, "citations": [CITE_1]}),
        ("text_done", {"text": ", and ", "seq": 4}),
        ("text_done", {"text": "it came with PEP 3156.", "seq": 4, "citations": [CITE_2, CITE_1]}),
        ("turn_end", {"turn": 1, "result": "finished"}),
    ]


def test_citations_are_numbered_after_the_text_they_belong_to() -> None:
    out, _ = _run(_cited_message())
    assert out == (
        "Let me look. Based on it, asyncio writes concurrent code [1], and "
        "it came with PEP 3156. [2][1]\n"
        "\n[1] asyncio — https://docs.python.org/3/library/asyncio.html"
        "\n[2] PEP 3156 — https://peps.python.org/pep-3156/\n"
    )


def test_a_cited_answer_cut_off_is_written_and_marked_not_kept() -> None:
    events = _cited_message()[:10]  # the run ends before the message was committed
    out, err = _run(events, "paused")
    assert (
        out
        == "Let me look. Based on it, asyncio writes concurrent code, and it came with PEP 3156.\n"
    )
    assert NOT_KEPT in err
    assert "[1]" not in out


def test_an_answer_without_citations_is_printed_as_before() -> None:
    events: Events = [("text_delta", {"text": "hello"}), ("text_done", {"text": "hello", "seq": 2})]
    out, _ = _run(events)
    assert out == "hello\n"


def test_web_text_never_reaches_the_terminal_raw() -> None:
    """A page's title with a clipboard-writing escape, markup and ten thousand characters; a
    query with a carriage return; a citation to a javascript: URL."""
    evil_title = "\x1b]52;c;ZXZpbA==\x07[bold]Title[/bold]" + "x" * 10_000
    events: Events = [
        (
            "server_tool_call",
            {"id": "srvtoolu_1", "name": "web_search", "input": {"query": "a\rb\x1b[2J"}},
        ),
        (
            "server_tool_result",
            {
                "id": "srvtoolu_1",
                "name": "web_search",
                "sources": [{"url": "https://e.example", "title": evil_title}],
                "error_code": None,
            },
        ),
        ("citation", {"url": "javascript:alert(1)", "title": evil_title, "cited_text": "x"}),
        ("text_delta", {"text": "Cited\x1b]8;;http://x\x07."}),
        (
            "text_done",
            {
                "text": "Cited\x1b]8;;http://x\x07.",
                "seq": 3,
                "citations": [
                    {"url": "javascript:alert(1)", "title": evil_title, "cited_text": "x"}
                ],
            },
        ),
    ]
    out, err = _run(events)
    for text in (out, err):
        assert "\x1b" not in text and "\x07" not in text and "\r" not in text
    assert "\\x1b]52;c;ZXZpbA==\\x07[bold]Title[/bold]" in err
    assert max(len(line) for line in (out + err).splitlines()) < 400
    assert "javascript:alert(1) (not a web link)" in out


def test_a_client_tool_call_inside_a_cited_message_keeps_the_text_after_it() -> None:
    """Text, a client tool call, more text, in one message: the call's line is printed with
    the commit, and no text is lost; the sources follow the message."""
    events: Events = [
        ("citation", CITE_1),
        ("text_delta", {"text": "Cited."}),
        ("tool_call_start", {"id": "toolu_1", "name": "read_file"}),
        ("text_delta", {"text": " After the call."}),
        ("text_done", {"text": "Cited.", "seq": 5, "citations": [CITE_1]}),
        (
            "tool_call_done",
            {"id": "toolu_1", "name": "read_file", "arguments": {"path": "a"}, "seq": 5},
        ),
        ("text_done", {"text": " After the call.", "seq": 5}),
        (
            "tool_result",
            {"id": "toolu_1", "summary": "read a", "content": "", "is_error": False, "seq": 6},
        ),
    ]
    out, err = _run(events)
    assert out == f"Cited. [1] After the call.\n\n[1] asyncio — {CITE_1['url']}\n"
    assert '⚙ read_file {"path": "a"}' in err
