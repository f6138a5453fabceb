"""The API's web search and fetch and the answer's citations, as an editor sees them over
ACP: a tool call of kind ``search``/``fetch`` titled with the query or URL, in progress, then
completed with a link per page (or failed with the error in words); ``[n]`` after the text
each citation belongs to and the sources as links after the message. Live (pure mapping of
the pod's events) and replayed by ``session/load`` through the ACP SDK's own client."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from acp import schema

from cli.acp.web import answer_updates, server_call, server_result
from cli.cited_stream import CitedStream
from tests.acp.client import acp_agent, acp_env
from tests.cli.web_session import DOCS, EVIL_TITLE, EVIL_URL, web_search_api, write_web_session

PEP = "https://peps.python.org/pep-3156/"


def _cite(url: str, title: str) -> dict[str, Any]:
    return {"url": url, "title": title, "cited_text": "c"}


def _updates(events: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    cited = CitedStream()
    out: list[Any] = []
    for name, data in events:
        out += answer_updates(cited, name, data)
    return out


def _said(updates: list[Any]) -> str:
    chunks = [u.content for u in updates if u.session_update == "agent_message_chunk"]
    return "".join(c.text if c.type == "text" else f"<{c.uri}>" for c in chunks)


def test_a_search_is_a_tool_call_of_kind_search_with_its_results_as_links() -> None:
    start = server_call("srvtoolu_1", "web_search", {"query": "python asyncio"})
    assert (start.kind, start.status, start.title) == (
        "search",
        "in_progress",
        'search: "python asyncio"',
    )
    done = server_result("srvtoolu_1", "web_search", [(DOCS, "asyncio"), (PEP, "PEP 3156")], None)
    assert done.status == "completed"
    assert done.content is not None
    links = [c.content for c in done.content if c.content.type == "resource_link"]
    assert [(link.uri, link.name) for link in links] == [(DOCS, "asyncio"), (PEP, "PEP 3156")]
    fetch = server_call("srvtoolu_2", "web_fetch", {"url": "https://example.com/a"})
    assert (fetch.kind, fetch.title) == ("fetch", "fetch: https://example.com/a")


def test_a_failed_search_fails_with_its_error_in_words() -> None:
    failed = server_result("srvtoolu_1", "web_search", [], "too_many_requests")
    assert failed.status == "failed"
    assert failed.content is not None
    [text] = [c.content.text for c in failed.content if c.content.type == "text"]
    assert text == "search failed: too many requests (rate limited) [too_many_requests]"


def test_citations_are_numbered_after_their_text_and_listed_as_links() -> None:
    sources = [{"url": DOCS, "title": "asyncio"}]
    events: list[tuple[str, dict[str, Any]]] = [
        ("text_delta", {"text": "Let me look. "}),
        ("server_tool_call", {"id": "srvtoolu_1", "name": "web_search", "input": {"query": "q"}}),
        (
            "server_tool_result",
            {"id": "srvtoolu_1", "name": "web_search", "sources": sources, "error_code": None},
        ),
        ("citation", _cite(DOCS, "asyncio")),
        ("text_delta", {"text": "asyncio is concurrent"}),
        ("text_delta", {"text": ", see "}),
        ("citation", _cite(PEP, "PEP 3156")),
        ("text_delta", {"text": "the PEP."}),
        ("text_done", {"text": "Let me look. ", "seq": 2}),
        (
            "text_done",
            {"text": "asyncio is concurrent", "seq": 2, "citations": [_cite(DOCS, "asyncio")]},
        ),
        ("text_done", {"text": ", see ", "seq": 2}),
        ("text_done", {"text": "the PEP.", "seq": 2, "citations": [_cite(PEP, "PEP 3156")]}),
        ("turn_end", {"turn": 1, "result": "finished"}),
    ]
    updates = _updates(events)
    assert _said(updates) == (
        f"Let me look. asyncio is concurrent [1], see the PEP. [2]\n\nSources:\n[1] <{DOCS}>\n[2] <{PEP}>"
    )
    kinds = [u.session_update for u in updates]
    assert kinds[1:3] == ["tool_call", "tool_call_update"]  # between the text, as it happened


def test_cited_text_the_pod_never_committed_still_reaches_the_editor() -> None:
    events: list[tuple[str, dict[str, Any]]] = [
        ("citation", _cite(DOCS, "asyncio")),
        ("text_delta", {"text": "half an answer"}),
        ("run_end", {"result": "paused"}),
    ]
    assert _said(_updates(events)) == "half an answer"


def test_web_text_is_never_a_link_markup_or_escape_sequence() -> None:
    done = server_result(
        "srvtoolu_1", "web_search", [(EVIL_URL, EVIL_TITLE), (DOCS, EVIL_TITLE)], None
    )
    assert done.content is not None
    links = [c.content for c in done.content if c.content.type == "resource_link"]
    assert [link.uri for link in links] == [DOCS]  # javascript: is never a link
    texts = [c.content.text for c in done.content if c.content.type == "text"]
    assert any(t.endswith(f"— {EVIL_URL} (not a web link)") for t in texts)
    for shown in [*texts, links[0].name, str(links[0].title)]:
        assert "\x1b" not in shown and "\x07" not in shown and len(shown) < 400
    start = server_call(
        "srvtoolu_1", "web_search", {"query": "a\x1b]52;c;eA==\x07b\n[x](javascript:y)"}
    )
    assert "\x1b" not in start.title and "\n" not in start.title
    events: list[tuple[str, dict[str, Any]]] = [
        ("citation", _cite(EVIL_URL, "[click](javascript:alert(1))")),
        (
            "text_done",
            {
                "text": "Cited.",
                "seq": 2,
                "citations": [_cite(EVIL_URL, "[click](javascript:alert(1))")],
            },
        ),
        ("turn_end", {"turn": 1, "result": "finished"}),
    ]
    said = _said(_updates(events))
    # The title's Markdown is escaped: an editor shows it as written, not as a link.
    assert "\\[click\\]\\(javascript:alert\\(1\\)\\)" in said
    assert "](javascript" not in said


@pytest.fixture
def env(short_dir: Path, tmp_path: Path) -> dict[str, str]:
    return acp_env(dict(os.environ), short_dir, tmp_path / "state")


async def test_session_load_replays_searches_and_citations(
    env: dict[str, str], workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", env["XDG_STATE_HOME"])
    write_web_session(workspace)
    async with acp_agent(env, "--provider", "scripted") as (conn, client, _):
        await conn.load_session(cwd=str(workspace), session_id="web-answer", mcp_servers=[])
        [call] = client.of("tool_call")
        assert isinstance(call, schema.ToolCallStart)
        assert (call.tool_call_id, call.kind, call.title) == (
            "srvtoolu_01A",
            "search",
            'search: "python asyncio"',
        )
        [result] = [u for u in client.of("tool_call_update") if u.tool_call_id == "srvtoolu_01A"]
        assert result.status == "completed"
        links = [c.content.uri for c in result.content if c.content.type == "resource_link"]
        assert links == [DOCS]
        said = client.text()
        assert said.startswith(
            "Let me search. Per the docs, asyncio writes concurrent code [1][2]."
        )
        assert f"[1] <{DOCS}>" in said
        # The hostile title: its escapes shown (and Markdown-escaped), cut, and no link.
        evil = "\\\\x1b\\]52;c;ZXZpbA==\\\\x07\\\\x1b\\]0;PWNED\\\\x07\\[bold red\\]Owned\\[/\\]"
        assert f"\n[2] {evil} AAA" in said
        assert said.endswith("A… — javascript:alert\\(document.cookie\\) (not a web link)")
        assert "\x1b" not in said and "\x07" not in said


def test_the_local_web_fetch_is_titled_with_its_url() -> None:
    """The pod's own ``web_fetch`` tool (a client tool) names the page it reads."""
    from cli.acp.mapping import tool_title

    assert tool_title("web_fetch", {"url": "https://example.com/a\nb"}) == (
        "web_fetch: https://example.com/a"
    )


async def test_a_live_search_and_cited_answer_through_a_real_pod(
    env: dict[str, str], workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fake Messages API streams a search, its results and cited text; the pod's events
    reach the editor as a search tool call and an answer with its ``[n]`` and links."""
    with web_search_api(monkeypatch) as api:
        env = {**env, "ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": api.base_url}
        async with acp_agent(env, "--provider", "anthropic", "--model", "fake-model") as (
            conn,
            client,
            _,
        ):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            done = await conn.prompt(session_id=session.session_id, prompt=[_prompt("async?")])
            assert done.stop_reason == "end_turn"
    [call] = client.of("tool_call")
    assert (call.kind, call.status, call.title) == (
        "search",
        "in_progress",
        'search: "python asyncio"',
    )
    [result] = client.of("tool_call_update")
    assert result.status == "completed"
    assert [c.content.uri for c in result.content if c.content.type == "resource_link"] == [DOCS]
    said = client.text()
    assert said.startswith("Let me search. Per the docs, asyncio writes concurrent code [1][2].")
    assert f"\n\nSources:\n[1] <{DOCS}>\n[2] " in said
    assert "\x1b" not in said
    # The search came between the answer's first words and the rest, as it happened.
    kinds = [u.session_update for _, u in client.updates]
    first_text = kinds.index("agent_message_chunk")
    assert (
        first_text
        < kinds.index("tool_call")
        < len(kinds) - 1 - kinds[::-1].index("agent_message_chunk")
    )


def _prompt(text: str) -> schema.TextContentBlock:
    return schema.TextContentBlock(type="text", text=text)
