"""The API's web search and fetch in the chat model: a card per call (the query as it starts,
then the titles or the error in words), citations numbered after the text each belongs to
with the sources under the message; a reattached client draws the same from history; web
text never reaches the screen raw."""

from __future__ import annotations

from typing import Any

from cli.tui.model import ChatModel
from cli.tui.web_entries import ServerToolEntry, SourcesEntry
from orchestrator.protocol import HistoryData
from orchestrator.serving.client import PodEvent

DOCS = "https://docs.python.org/3/library/asyncio.html"
PEP = "https://peps.python.org/pep-3156/"
CITE_1 = {
    "type": "web_search_result_location",
    "url": DOCS,
    "title": "asyncio",
    "cited_text": "a",
    "encrypted_index": "e1",
}
CITE_2 = {
    "type": "web_search_result_location",
    "url": PEP,
    "title": "PEP 3156",
    "cited_text": "b",
    "encrypted_index": "e2",
}
RESULTS = [
    {"type": "web_search_result", "url": DOCS, "title": "asyncio", "encrypted_content": "x"},
    {"type": "web_search_result", "url": PEP, "title": "PEP 3156", "encrypted_content": "y"},
]
BLOCKS: list[dict[str, Any]] = [
    {"type": "text", "text": "Let me look. "},
    {
        "type": "server_tool_use",
        "id": "srvtoolu_1",
        "name": "web_search",
        "input": {"query": "python asyncio"},
    },
    {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": RESULTS},
    {"type": "text", "text": "Based on it, "},
    {"type": "text", "text": "asyncio writes concurrent code", "citations": [CITE_1]},
    {"type": "text", "text": ", and "},
    {"type": "text", "text": "it came with PEP 3156.", "citations": [CITE_2, CITE_1]},
]
USER = {
    "kind": "user_message",
    "seq": 1,
    "turn": 1,
    "segments": [{"kind": "text", "text": "async?"}],
    "text": "async?",
}
ASSISTANT = {
    "kind": "assistant",
    "seq": 2,
    "turn": 1,
    "blocks": BLOCKS,
    "stop_reason": "end_turn",
    "synthetic": False,
}


def _public(citation: dict[str, Any]) -> dict[str, Any]:
    return {
        "url": citation["url"],
        "title": citation["title"],
        "cited_text": citation["cited_text"],
    }


def live_events() -> list[tuple[str, dict[str, Any]]]:
    """The message as the pod streams it, then commits it (text_done per block)."""
    sources = [{"url": DOCS, "title": "asyncio"}, {"url": PEP, "title": "PEP 3156"}]
    return [
        ("user_message", {"segments": USER["segments"], "seq": 1}),
        ("text_delta", {"text": "Let me look. "}),
        (
            "server_tool_call",
            {"id": "srvtoolu_1", "name": "web_search", "input": {"query": "python asyncio"}},
        ),
        (
            "server_tool_result",
            {"id": "srvtoolu_1", "name": "web_search", "sources": sources, "error_code": None},
        ),
        ("text_delta", {"text": "Based on it, "}),
        ("citation", _public(CITE_1)),
        ("text_delta", {"text": "asyncio writes concurrent code"}),
        ("text_delta", {"text": ", and "}),
        ("citation", _public(CITE_2)),
        ("citation", _public(CITE_1)),
        ("text_delta", {"text": "it came with PEP 3156."}),
        ("usage", {"input_tokens": 10, "output_tokens": 5, "web_search_requests": 1}),
        ("text_done", {"text": "Let me look. ", "seq": 2}),
        ("text_done", {"text": "Based on it, ", "seq": 2}),
        (
            "text_done",
            {"text": "asyncio writes concurrent code", "seq": 2, "citations": [_public(CITE_1)]},
        ),
        ("text_done", {"text": ", and ", "seq": 2}),
        (
            "text_done",
            {
                "text": "it came with PEP 3156.",
                "seq": 2,
                "citations": [_public(CITE_2), _public(CITE_1)],
            },
        ),
        ("turn_end", {"turn": 1, "result": "finished"}),
    ]


def feed(model: ChatModel, events: list[tuple[str, dict[str, Any]]]) -> None:
    for name, data in events:
        model.apply(PodEvent(name, data))


EXPECTED = [
    "user: async?",
    "assistant: Let me look. ",
    'web: ⌕ search: "python asyncio" → 2 results: asyncio (docs.python.org), PEP 3156 (peps.python.org)',
    "assistant: Based on it, asyncio writes concurrent code \\[1\\], and it came with PEP 3156. \\[2\\]\\[1\\]",
    f"sources: [1] asyncio — {DOCS} | [2] PEP 3156 — {PEP}",
]


def test_a_search_and_a_cited_answer_as_they_stream() -> None:
    model = ChatModel()
    feed(model, live_events()[:3])
    card = model.entries[-1]
    assert isinstance(card, ServerToolEntry) and not card.done
    assert card.title == '⌕ search: "python asyncio" …'  # the query shows as the call starts
    feed(model, live_events()[3:])
    assert model.transcript() == EXPECTED
    assert model.pod.web_searches == 1
    assert "1 search" in model.pod.text()


def test_a_reattached_client_draws_the_same_from_history() -> None:
    model = ChatModel()
    model.load_history(HistoryData(items=[USER, ASSISTANT]))
    assert model.transcript() == EXPECTED
    card = next(e for e in model.entries if isinstance(e, ServerToolEntry))
    assert card.body.splitlines()[1:] == [f"asyncio — {DOCS}", f"PEP 3156 — {PEP}"]
    assert model.card_indices() == [2]


def test_citations_restart_at_one_in_the_next_message() -> None:
    second = {
        **ASSISTANT,
        "seq": 4,
        "blocks": [{"type": "text", "text": "Again.", "citations": [CITE_2]}],
    }
    model = ChatModel()
    model.load_history(HistoryData(items=[USER, ASSISTANT, second]))
    assert model.transcript()[-2:] == [
        "assistant: Again. \\[1\\]",
        f"sources: [1] PEP 3156 — {PEP}",
    ]


def test_a_failed_search_says_its_error_in_words() -> None:
    failed = {"type": "web_search_tool_result_error", "error_code": "max_uses_exceeded"}
    blocks = [BLOCKS[1], {**BLOCKS[2], "content": failed}]
    model = ChatModel()
    model.load_history(HistoryData(items=[{**ASSISTANT, "blocks": blocks}]))
    (card,) = model.entries
    assert isinstance(card, ServerToolEntry)
    assert card.title.endswith(
        "→ search failed: the search limit for this request was reached [max_uses_exceeded]"
    )
    feed(
        model,
        [
            (
                "server_tool_call",
                {"id": "srvtoolu_9", "name": "web_fetch", "input": {"url": "https://x.example/"}},
            )
        ],
    )
    feed(
        model,
        [
            (
                "server_tool_result",
                {
                    "id": "srvtoolu_9",
                    "name": "web_fetch",
                    "sources": [],
                    "error_code": "url_not_accessible",
                },
            )
        ],
    )
    assert model.transcript()[-1] == (
        "web: ⌕ fetch: https://x.example/ → fetch failed: the page could not be reached [url_not_accessible]"
    )


def test_a_result_whose_call_was_not_seen_is_drawn_alone() -> None:
    """Attached after the call started; or its result opens the next message (a client tool
    was called beside it)."""
    model = ChatModel()
    sources = [{"url": DOCS, "title": "asyncio"}]
    feed(
        model,
        [
            (
                "server_tool_result",
                {"id": "srvtoolu_7", "name": "web_search", "sources": sources, "error_code": None},
            )
        ],
    )
    assert model.transcript() == ["web: ⌕ search → 1 result: asyncio (docs.python.org)"]
    history = [{**ASSISTANT, "blocks": [BLOCKS[2]]}]
    model.load_history(HistoryData(items=history))
    assert model.transcript() == [
        "web: ⌕ search → 2 results: asyncio (docs.python.org), PEP 3156 (peps.python.org)"
    ]


EVIL_TITLE = "\x1b]52;c;ZXZpbA==\x07[bold red]Pwned[/]\r\x1b[2J" + "A" * 10_000


def test_web_text_never_reaches_the_screen_raw() -> None:
    """A title that writes the clipboard, markup, a carriage return and a screen clear, ten
    thousand characters; a query with line breaks; a javascript: URL cited."""
    evil_url = "javascript:alert(document.cookie)"
    results = [
        {
            "type": "web_search_result",
            "url": evil_url,
            "title": EVIL_TITLE,
            "encrypted_content": "x",
        }
    ]
    citation = {
        "type": "web_search_result_location",
        "url": evil_url,
        "title": EVIL_TITLE,
        "cited_text": "c",
        "encrypted_index": "e",
    }
    blocks = [
        {
            "type": "server_tool_use",
            "id": "srvtoolu_1",
            "name": "web_search",
            "input": {"query": "a\nb\x1b]0;title\x07"},
        },
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": results},
        {"type": "text", "text": "Cited.", "citations": [citation]},
    ]
    model = ChatModel()
    model.load_history(HistoryData(items=[{**ASSISTANT, "blocks": blocks}]))
    card, _, sources = model.entries
    assert isinstance(card, ServerToolEntry) and isinstance(sources, SourcesEntry)
    for shown in (card.title, card.body, sources.text):
        assert not any(ord(c) < 0x20 and c != "\n" for c in shown), repr(shown)
        assert "\\x1b]52;c;ZXZpbA==\\x07[bold red]Pwned[/]" in shown
        assert max(len(line) for line in shown.splitlines()) < 400
    assert card.title.startswith('⌕ search: "a b\\x1b]0;title\\x07"')
    assert sources.lines[0].endswith(f"— {evil_url} (not a web link)")


def test_a_search_cut_off_with_its_response_is_marked_not_kept() -> None:
    """Paused mid-response: the call never reaches the history, and its card says so; a
    search whose response completed (its usage came) stays as it is."""
    model = ChatModel()
    events = live_events()
    feed(model, [*events[:4], events[11]])  # the call, its result, the response's usage
    feed(model, [events[2], ("run_end", {"result": "paused"})])
    assert model.transcript()[-2:] == [
        'web: ⌕ search: "python asyncio" → 2 results: asyncio (docs.python.org), PEP 3156 (peps.python.org)',
        'web: ⌕ search: "python asyncio" [interrupted · not kept in history]',
    ]


def test_text_after_a_client_call_in_the_same_message_is_drawn_after_its_card() -> None:
    """A client that saw none of the stream (it attached as the message was committed)."""
    model = ChatModel()
    feed(
        model,
        [
            ("text_done", {"text": "Cited.", "seq": 5, "citations": [_public(CITE_1)]}),
            (
                "tool_call_done",
                {"id": "toolu_1", "name": "read_file", "arguments": {"path": "a"}, "seq": 5},
            ),
            ("text_done", {"text": "After.", "seq": 5}),
        ],
    )
    assert model.transcript() == [
        "assistant: Cited. \\[1\\]",
        f"sources: [1] asyncio — {DOCS}",
        "tool: ⚙ read_file(path=a) …",
        "assistant: After.",
    ]
