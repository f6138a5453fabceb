"""Context economy over HTTP: the real SDK against the fake Messages API with the real rules
(prompt-cache accounting, a context window, the 400 for an over-long prompt)."""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from conformance.fake_api import FakeAnthropic, Reply, ToolCall
from conformance.models import ModelSpec
from conformance.tokens import count_input_tokens
from orchestrator.adapters.providers.anthropic import AnthropicProvider
from orchestrator.adapters.session import load_session
from orchestrator.core.prompt_cache import without_breakpoints
from orchestrator.runtime.compaction import COMPACTION_PROMPT
from tests.e2e.harness import collect_until, running_pod

HEADER = COMPACTION_PROMPT.split("]")[0] + "]"


def is_compaction(body: dict[str, Any]) -> bool:
    """Whether a request body is a compaction's summary request."""
    last = body["messages"][-1]["content"]
    return isinstance(last, list) and str(last[-1].get("text", "")).startswith(HEADER)


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        b
        for m in body["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]


def reader(files: int) -> Callable[[dict[str, Any]], Reply]:
    """A model that reads f1..fN one round at a time, then answers; it summarises on request."""
    done: list[int] = []

    def respond(body: dict[str, Any]) -> Reply:
        if is_compaction(body):
            return Reply(text=f"Summary: read files f1..f{len(done)} so far; keep going.")
        if len(done) < files:
            done.append(len(done) + 1)
            return Reply(tool_calls=[ToolCall("read_file", {"path": f"f{done[-1]}.txt"})])
        return Reply(text="All files read.")

    return respond


@pytest.fixture
async def small_window() -> AsyncIterator[FakeAnthropic]:
    server = FakeAnthropic(models=[ModelSpec(id="fake-model", context_window=60_000)]).start()
    try:
        yield server
    finally:
        server.stop()


def _provider(fake: FakeAnthropic) -> AnthropicProvider:
    return AnthropicProvider(
        "fake-model", api_key="test-key", base_url=fake.base_url, retry_base_delay_s=0.01
    )


def _write_files(workspace: Path, n: int, size: int = 12_000) -> None:
    for k in range(1, n + 1):
        line = f"file {k} line " + "x" * 60 + "\n"
        (workspace / f"f{k}.txt").write_text(line * (size // len(line)))


async def test_forty_large_reads_finish_under_a_60k_window(
    workspace: Path, short_dir: Path, small_window: FakeAnthropic
) -> None:
    _write_files(workspace, 40)
    small_window.responder = reader(40)
    provider = _provider(small_window)
    async with running_pod(workspace, short_dir, provider=provider, max_rounds=100) as pod:
        c = await pod.client()
        await c.send("run", {"input": "read every file f1..f40"})
        events = await collect_until(c, "run_end", timeout=60)
        assert events[-1].data == {"result": "finished"}
        compactions = [e.data for e in events if e.event == "compaction"]
        assert len(compactions) >= 2
        assert all(c["tokens_after"] < c["tokens_before"] for c in compactions)
        await c.close()
    await provider.aclose()
    requests = [r for r in small_window.requests if r.path == "/v1/messages"]
    assert all(r.valid and r.status == 200 for r in requests), [r.error for r in requests]
    assert max(count_input_tokens(r.body) for r in requests) <= 60_000
    turn_requests = [r.body for r in requests if not is_compaction(r.body)]
    # The newest result is in the last request: the model saw what it asked for last.
    last_results = tool_results(turn_requests[-1])
    assert "file 40 line" in last_results[-1]["content"]


async def test_prompt_too_long_is_recovered_by_compacting_once(
    workspace: Path, short_dir: Path, small_window: FakeAnthropic
) -> None:
    # A window the pod does not know about: its own estimate says the request fits, the API
    # refuses it, and the pod compacts and tries again.
    _write_files(workspace, 20)
    small_window.responder = reader(20)
    provider = _provider(small_window)
    async with running_pod(
        workspace, short_dir, provider=provider, context_window=400_000, max_rounds=30
    ) as pod:
        c = await pod.client()
        await c.send("run", {"input": "read them"})
        events = await collect_until(c, "run_end", timeout=60)
        assert events[-1].data == {"result": "finished"}
        triggers = [e.data["trigger"] for e in events if e.event == "compaction"]
        assert "recovery" in triggers
        # The refusal named the real window: the pod took it, said so, and compacted for it.
        alerts = [e.data["message"] for e in events if e.event == "alert"]
        assert any("context window is 60,000 tokens" in a for a in alerts), alerts
        await c.close()
    await provider.aclose()
    refused = [r for r in small_window.requests if r.status == 400]
    assert refused and all("prompt is too long" in (r.error or "") for r in refused)


async def test_each_request_reads_what_the_previous_one_wrote(
    workspace: Path, short_dir: Path
) -> None:
    fake = FakeAnthropic().start()
    try:
        _write_files(workspace, 6, size=4000)
        fake.responder = reader(3)
        provider = _provider(fake)
        async with running_pod(workspace, short_dir, provider=provider) as pod:
            c = await pod.client()
            for n in range(3):
                await c.send("run", {"input": f"turn {n}: read three files"})
                await collect_until(c, "run_end", timeout=30)
                fake.responder = reader(3)
            status = (await c.request("get_status")).data
            await c.close()
        await provider.aclose()
        requests = [r.body for r in fake.requests if r.path == "/v1/messages"]
        # Byte-identical prefix: each request starts with the previous one's messages, as the
        # previous request sent them (breakpoint markers aside).
        for before, after in itertools.pairwise(requests):
            old = without_breakpoints(before["messages"])
            new = without_breakpoints(after["messages"])
            prefix = old[:-1]  # the last user message may have grown by the new results
            assert json.dumps(new[: len(prefix)]) == json.dumps(prefix)
            assert json.dumps(after["tools"]) == json.dumps(before["tools"])
            assert json.dumps(after["system"]) == json.dumps(before["system"])
        usage = status["usage"]
        total_input = sum(
            usage[k]
            for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        )
        assert usage["cache_read_input_tokens"] / total_input >= 0.8
        assert status["context"]["window"] == 200_000
        assert status["cost_usd"] is None  # fake-model has no price; a priced model shows $
    finally:
        fake.stop()


async def test_usage_is_recorded_per_item_and_summed_per_session(
    workspace: Path, short_dir: Path, tmp_path: Path
) -> None:
    fake = FakeAnthropic().start()
    session = tmp_path / "s.jsonl"
    try:
        fake.push(Reply(text="one"), Reply(text="two"))
        provider = _provider(fake)
        async with running_pod(
            workspace, short_dir, provider=provider, session=session, model="fake-model"
        ) as pod:
            c = await pod.client()
            for text in ("a", "b"):
                await c.send("run", {"input": text})
                await collect_until(c, "run_end")
            first = (await c.request("get_status")).data["usage"]
            await c.close()
        await provider.aclose()
        assert first["output_tokens"] > 0
        # Everything up to the newest breakpoint is written to or read from the cache.
        assert first["cache_creation_input_tokens"] > 0
        items = load_session(session).items
        recorded = [i.usage for i in items if getattr(i, "usage", None) is not None]
        assert len(recorded) == 2
        # A restarted pod counts the session's tokens from its file, not from zero.
        async with running_pod(
            workspace, short_dir, provider=_provider(fake), session=session, continue_=True
        ) as pod:
            c = await pod.client()
            again = (await c.request("get_status")).data["usage"]
            await c.close()
        assert again == first
    finally:
        fake.stop()


async def test_a_long_session_compacts_often_and_reattaches_files_fresh(
    workspace: Path, short_dir: Path
) -> None:
    from orchestrator.adapters.providers.base import ProviderRequest
    from orchestrator.adapters.providers.scripted import ScriptedReply, ScriptedToolCall

    (workspace / "notes.md").write_text("version 1 of the notes\n" + "n" * 500 + "\n")
    for k in range(30):
        (workspace / f"page{k}.md").write_text(f"page {k}\n" + "p" * 1500 + "\n")

    def respond(request: ProviderRequest) -> ScriptedReply:
        last = request.messages[-1]["content"]
        if any(b.get("type") == "tool_result" for b in last):
            return ScriptedReply(text="Read it.")
        turn = sum(1 for m in request.messages if m["role"] == "user")
        path = "notes.md" if "notes" in str(last) else f"page{turn % 30}.md"
        return ScriptedReply(tool_calls=[ScriptedToolCall(name="read_file", input={"path": path})])

    async with running_pod(workspace, short_dir, context_window=6_000, max_rounds=10) as pod:
        pod.provider.responder = respond
        c = await pod.client()
        seen: list[dict[str, Any]] = []
        for n in range(30):
            text = "keep @notes.md in mind" if n == 0 else f"turn {n}: read a page"
            if n == 12:
                (workspace / "notes.md").write_text("version 2 of the notes\n")
            await c.send("run", {"input": text})
            events = await collect_until(c, "run_end", timeout=20)
            assert events[-1].data == {"result": "finished"}, n
            seen += [e.data for e in events if e.event == "compaction"]
        history = (await c.request("get_history")).data["items"]
        await c.close()
        pod.assert_all_requests_valid()
    assert len(seen) >= 3
    compactions = [i for i in history if i["kind"] == "compaction"]
    # get_history keeps every item: all 30 user messages are still there.
    assert sum(1 for i in history if i["kind"] == "user_message") == 30
    notes = [f["text"] for comp in compactions for f in comp["files"] if f["path"] == "notes.md"]
    assert notes, "the notes were never re-attached"
    assert "version 1" in notes[0]
    assert "version 2" in notes[-1]  # read again at each compaction: fresh, not remembered
    assert max(r.messages.__len__() for r in pod.provider.requests) < 40
