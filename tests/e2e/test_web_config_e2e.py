"""The web tools over the real socket and the real anthropic SDK against the fake Messages API:
a model whose Models API entry says it searches gets the server tools declared in every turn
request (after the client tools, the prompt cache still read), the summary request of a
compaction gets none, and ``get_status`` says what was decided and why."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from conformance.fake_api import FakeAnthropic, Reply, ToolCall
from conformance.models import DEFAULT_MODELS, ModelSpec
from orchestrator.core.prompt_cache import count_breakpoints
from tests.e2e.harness import collect_until, fake_provider, running_pod
from tests.e2e.test_context_economy_e2e import is_compaction

SEARCHING = ModelSpec(
    id="fake-searcher", thinking=frozenset({"disabled"}), efforts=frozenset(), web_search=True
)
NOT_SEARCHING = ModelSpec(id="fake-plain", thinking=frozenset({"disabled"}), efforts=frozenset())


@pytest.fixture
async def api() -> AsyncIterator[FakeAnthropic]:
    server = FakeAnthropic(models=[*DEFAULT_MODELS, SEARCHING, NOT_SEARCHING]).start()
    try:
        yield server
    finally:
        server.stop()


def _messages(api: FakeAnthropic) -> list[dict[str, Any]]:
    requests = [r for r in api.requests if r.path == "/v1/messages"]
    assert requests and all(r.valid and r.status == 200 for r in requests), [
        r.error for r in requests
    ]
    return [r.body for r in requests]


def _reader(api: FakeAnthropic) -> None:
    # Each turn reads the README then answers: two requests a turn.
    def respond(body: dict[str, Any]) -> Reply:
        if is_compaction(body):
            return Reply(text="Summary: the README was read.")
        last = body["messages"][-1]["content"]
        if isinstance(last, list) and any(b.get("type") == "tool_result" for b in last):
            return Reply(text="Read it.")
        return Reply(tool_calls=[ToolCall("read_file", {"path": "README.md"})])

    api.responder = respond


async def test_every_turn_request_declares_the_server_tools_after_the_client_tools(
    workspace: Path, short_dir: Path, api: FakeAnthropic
) -> None:
    _reader(api)
    provider = fake_provider(api, "fake-searcher")
    web = {"search": "auto", "fetch": "auto", "max_uses": 3, "blocked_domains": ["x.org"]}
    async with running_pod(workspace, short_dir, provider=provider, web=web) as pod:
        c = await pod.client()
        for n in range(3):
            await c.send("run", {"input": f"turn {n}: read the README"})
            assert (await collect_until(c, "run_end"))[-1].data == {"result": "finished"}
        status = (await c.request("get_status")).data
        await c.send("compact")
        await collect_until(c, "compaction")
        await c.close()
    await provider.aclose()
    bodies = _messages(api)
    turns = [b for b in bodies if not is_compaction(b)]
    [summary] = [b for b in bodies if is_compaction(b)]
    assert len(turns) == 6
    expected = [
        {"type": "web_search_20250305", "name": "web_search", "max_uses": 3,
         "blocked_domains": ["x.org"]},
        {"type": "web_fetch_20250910", "name": "web_fetch", "max_uses": 3,
         "blocked_domains": ["x.org"]},
    ]  # fmt: skip
    for body in turns:
        tools = body["tools"]
        assert tools[-2:] == expected
        client = tools[:-2]
        assert client and all("input_schema" in t for t in client)
        assert "read_file" in {t["name"] for t in client}
        # The cache's breakpoints are where they were: the system prompt (which covers the
        # tools before it) and the messages; none on a tool, and within the API's four.
        assert not any("cache_control" in t for t in tools)
        assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}
        assert count_breakpoints(body) <= 4
    # The tools are byte-identical from request to request: the prefix the cache reads.
    assert len({json.dumps(b["tools"]) for b in turns}) == 1
    # The summary request never searches: no server tool in it.
    assert all("input_schema" in t for t in summary["tools"])
    usage = status["usage"]
    read = usage["cache_read_input_tokens"]
    assert read / (read + usage["input_tokens"] + usage["cache_creation_input_tokens"]) >= 0.6
    assert status["web"] == {
        "search": "on",
        "fetch": "server",
        "why": {
            "search": "fake-searcher supports web search",
            "fetch": "fake-searcher runs the API's web fetch",
        },
    }


async def test_a_model_without_web_search_gets_none_and_says_why(
    workspace: Path, short_dir: Path, api: FakeAnthropic
) -> None:
    _reader(api)
    provider = fake_provider(api, "fake-plain")
    async with running_pod(
        workspace, short_dir, provider=provider, web={"search": "on", "fetch": "auto"}
    ) as pod:
        c = await pod.client()
        await c.send("run", {"input": "read the README"})
        events = await collect_until(c, "run_end")
        status = (await c.request("get_status")).data
        await c.close()
    await provider.aclose()
    assert events[-1].data == {"result": "finished"}
    # Declaring it would be a 400 on every request: it is left out, and the person is told.
    alerts = [e.data["message"] for e in events if e.event == "alert"]
    assert any(m.startswith("web search is off: ") and "fake-plain" in m for m in alerts), alerts
    for body in _messages(api):
        assert all("input_schema" in t for t in body["tools"])
    assert status["web"]["search"] == "off" and status["web"]["fetch"] == "local"
    assert "not honoured" in status["web"]["why"]["search"]


async def test_search_on_where_capabilities_are_unknown_is_declared_as_asked(
    workspace: Path, short_dir: Path, api: FakeAnthropic
) -> None:
    # fake-model's Models API entry lists no capabilities (a compatible endpoint): "on" is
    # the user's word for their endpoint, as thinking's explicit settings are.
    _reader(api)
    provider = fake_provider(api)
    async with running_pod(workspace, short_dir, provider=provider, web={"search": "on"}) as pod:
        c = await pod.client()
        await c.send("run", {"input": "read the README"})
        await collect_until(c, "run_end")
        status = (await c.request("get_status")).data
        await c.close()
    await provider.aclose()
    for body in _messages(api):
        assert [t["type"] for t in body["tools"] if "type" in t] == ["web_search_20250305"]
    assert status["web"]["search"] == "on" and status["web"]["fetch"] == "local"
    assert "unknown" in status["web"]["why"]["search"]
