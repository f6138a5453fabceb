"""The pod on the real anthropic SDK, talking HTTP to the fake Messages API server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from orchestrator.conformance.fake_api import Drop, FakeAnthropic, Fault, Reply, ToolCall
from orchestrator.providers.anthropic import AnthropicProvider
from tests.e2e.harness import collect_until, running_pod


@pytest.fixture
async def fake() -> AsyncIterator[FakeAnthropic]:
    server = FakeAnthropic().start()
    try:
        yield server
    finally:
        server.stop()


def _provider(fake: FakeAnthropic) -> AnthropicProvider:
    return AnthropicProvider(
        "fake-model", api_key="test-key", base_url=fake.base_url, retry_base_delay_s=0.01
    )


async def test_tool_round_pause_and_resume_over_http(
    workspace: Path, short_dir: Path, fake: FakeAnthropic
) -> None:
    fake.push(
        Reply(text="Let me look.", tool_calls=[ToolCall("read_file", {"path": "README.md"})]),
        Reply(text="z" * 300, chunk_size=3, delay_s=0.01),
        Reply(text="Done after resume."),
    )
    provider = _provider(fake)
    async with running_pod(workspace, short_dir, provider=provider) as pod:
        c = await pod.client()
        await c.send("run", {"input": "read the readme"})
        await c.wait_for("tool_result")
        await c.wait_for("text_delta")
        await c.send("pause")
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "paused"}
        await c.send("resume")
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "finished"}
        await c.close()
    await provider.aclose()
    requests = fake.requests
    assert len(requests) == 3
    assert all(r.valid for r in requests)
    # The resumed request repeats the interrupted one: nothing partial was committed.
    assert requests[1].body["messages"] == requests[2].body["messages"]
    last = requests[2].body["messages"]
    assert last[-1]["content"][0]["type"] == "tool_result"


async def test_overload_is_retried_and_reported(
    workspace: Path, short_dir: Path, fake: FakeAnthropic
) -> None:
    fake.push(Fault(status=529), Reply(text="ok after retry"))
    provider = _provider(fake)
    async with running_pod(workspace, short_dir, provider=provider) as pod:
        c = await pod.client()
        await c.send("run", {"input": "hi"})
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "finished"}
        alerts = [e.data for e in events if e.event == "alert"]
        assert alerts and alerts[0]["level"] == "warn" and "529" in alerts[0]["message"]
        await c.close()
    await provider.aclose()


async def test_dropped_stream_ends_errored_and_next_request_is_valid(
    workspace: Path, short_dir: Path, fake: FakeAnthropic
) -> None:
    fake.push(Drop(after_events=4, reply=Reply(text="this will be cut " * 10, chunk_size=4)))
    fake.push(Reply(text="fine now"))
    provider = _provider(fake)
    async with running_pod(workspace, short_dir, provider=provider) as pod:
        c = await pod.client()
        await c.send("run", {"input": "first"})
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "errored"}
        await c.send("run", {"input": "second"})
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "finished"}
        history = (await c.request("get_history")).data["items"]
        assert [i["kind"] for i in history] == ["user_message", "user_message", "assistant"]
        await c.close()
    await provider.aclose()
    assert all(r.valid for r in fake.requests)
