"""``list_models`` and ``set_model`` over the real socket, the real anthropic SDK against the
fake Messages API (which checks each request against the model it names): a change made
while the pod is idle reaches the next request, with the thinking the new model takes; one
made while a turn is open waits for the next turn (the open turn's requests keep the model
they began with), and what the provider does not list, or the config cannot take, is
refused with a reason while the pod keeps serving."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from conformance.fake_api import FakeAnthropic, Reply, ToolCall
from conformance.models import DEFAULT_MODELS
from tests.e2e.harness import collect_until, fake_provider, running_pod


@pytest.fixture
async def api() -> AsyncIterator[FakeAnthropic]:
    server = FakeAnthropic(models=list(DEFAULT_MODELS)).start()
    try:
        yield server
    finally:
        server.stop()


def _turn_requests(api: FakeAnthropic) -> list[dict[str, Any]]:
    requests = [r for r in api.requests if r.path == "/v1/messages"]
    assert all(r.valid and r.status == 200 for r in requests), [r.error for r in requests]
    return [r.body for r in requests]


def _writer(api: FakeAnthropic) -> None:
    # A prompt that says "write" makes one edit (asked about: default mode), then answers.
    def respond(body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]["content"]
        if isinstance(last, list) and any(b.get("type") == "tool_result" for b in last):
            return Reply(text="Written.")
        text = last if isinstance(last, str) else " ".join(str(b.get("text")) for b in last)
        if "write" in text:
            return Reply(tool_calls=[ToolCall("write_file", {"path": "a.txt", "content": "x"})])
        return Reply(text="Hello.")

    api.responder = respond


async def test_an_idle_change_reaches_the_next_request_with_the_new_models_thinking(
    workspace: Path, short_dir: Path, api: FakeAnthropic
) -> None:
    _writer(api)
    provider = fake_provider(api, "claude-sonnet-4-5")
    async with running_pod(workspace, short_dir, provider=provider) as pod:
        c = await pod.client()
        listed = await c.models()
        ids = [m.id for m in listed.models]
        assert set(ids) >= {spec.id for spec in DEFAULT_MODELS} and listed.reason == ""
        assert (listed.current, listed.thinking_setting) == ("claude-sonnet-4-5", "auto")
        await c.send("run", {"input": "hi"})
        assert (await collect_until(c, "run_end"))[-1].data == {"result": "finished"}

        changed = await c.request("set_model", {"model": "claude-opus-5", "effort": "high"})
        assert changed.event == "status", changed.data
        assert (changed.data["model"], changed.data["effort"]) == ("claude-opus-5", "high")
        assert changed.data["pending"] == {}
        await c.send("run", {"input": "hi again"})
        assert (await collect_until(c, "run_end"))[-1].data == {"result": "finished"}
        status = await c.status()
        await c.close()
    await provider.aclose()
    first, second = _turn_requests(api)
    assert first["model"] == "claude-sonnet-4-5"
    assert first["thinking"]["type"] == "enabled"  # sonnet 4.5 takes a budget
    assert second["model"] == "claude-opus-5"
    # Opus 5 (as the fake describes it) takes adaptive thinking only: decided again.
    assert second["thinking"] == {"type": "adaptive"}
    assert second["output_config"]["effort"] == "high"
    assert status.model == "claude-opus-5" and status.thinking.startswith("adaptive")


async def test_a_change_during_a_turn_waits_for_the_next_turn(
    workspace: Path, short_dir: Path, api: FakeAnthropic
) -> None:
    _writer(api)
    provider = fake_provider(api, "claude-sonnet-4-5")
    async with running_pod(
        workspace, short_dir, provider=provider, permissions={"mode": "default"}
    ) as pod:
        c = await pod.client()
        await c.send("run", {"input": "write the file"})
        asked = (await collect_until(c, "approval_request"))[-1]
        changed = await c.request("set_model", {"model": "claude-opus-5", "thinking": "off"})
        assert changed.event == "status", changed.data
        # The open turn keeps its model; the change waits and says so.
        assert changed.data["model"] == "claude-sonnet-4-5"
        assert changed.data["pending"] == {"model": "claude-opus-5", "thinking": "off"}
        await c.send("approve", {"id": asked.data["id"]})
        assert (await collect_until(c, "run_end"))[-1].data == {"result": "finished"}
        # Opus 5 refuses thinking off: the turn fails before any request, saying why.
        await c.send("run", {"input": "hi"})
        failed = await collect_until(c, "run_end")
        assert failed[-1].data == {"result": "errored"}
        [error] = [e for e in failed if e.event == "error"]
        assert "thinking" in error.data["message"], error.data
        fixed = await c.request("set_model", {"thinking": "auto"})
        assert fixed.event == "status" and fixed.data["thinking_setting"] == "auto"
        await c.send("run", {"input": "hi"})
        assert (await collect_until(c, "run_end"))[-1].data == {"result": "finished"}
        status = await c.status()
        await c.close()
    await provider.aclose()
    models = [body["model"] for body in _turn_requests(api)]
    assert models == ["claude-sonnet-4-5", "claude-sonnet-4-5", "claude-opus-5"]
    assert (status.model, status.pending) == ("claude-opus-5", {})
    assert (workspace / "a.txt").read_text() == "x"


async def test_what_cannot_be_taken_is_refused_and_the_pod_goes_on(
    workspace: Path, short_dir: Path, api: FakeAnthropic
) -> None:
    _writer(api)
    provider = fake_provider(api, "claude-sonnet-4-5")
    async with running_pod(workspace, short_dir, provider=provider, max_tokens=4096) as pod:
        c = await pod.client()
        unknown = await c.request("set_model", {"model": "claude-nonexistent-9"})
        assert unknown.event == "error" and unknown.data["code"] == "invalid_request"
        assert "'claude-nonexistent-9' is not a model the provider lists" in unknown.data["message"]
        budget = await c.request("set_model", {"thinking": 8000})
        assert budget.event == "error"
        assert "must be below max_tokens (4096)" in budget.data["message"]
        bad = await c.request("set_model", {"model": "../v1/files"})
        assert bad.event == "error" and "is not a model id" in bad.data["message"]
        await c.send("run", {"input": "hi"})
        assert (await collect_until(c, "run_end"))[-1].data == {"result": "finished"}
        status = await c.status()
        await c.close()
    await provider.aclose()
    assert (status.model, status.thinking_setting) == ("claude-sonnet-4-5", "auto")
    assert [body["model"] for body in _turn_requests(api)] == ["claude-sonnet-4-5"]
