"""A parent's budget reaches its child pods: each child gets what its parent has left, a
child that reaches it pauses the parent's ``task`` call the same way (``pause_reason:
"budget"``), what the child spent counts as the parent's, and ``set_budget`` + ``resume``
finishes both. The parent runs in-process; its child is a real ``pod serve`` process; every
request goes to the fake Messages API over HTTP (the real SDK).

Prices: input free, output $1 a token, so each reply's ``output_tokens`` is its cost."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conformance.fake_api import FakeAnthropic, Reply, ToolCall
from orchestrator.config.model import PodConfig
from orchestrator.core.prices import Prices
from orchestrator.serving.client import PodClient
from tests.e2e.harness import collect_until, fake_provider, running_pod

PARENT = "PARENT:"


def _texts(body: dict[str, Any]) -> tuple[str, int]:
    """The first user message's text, and how many tool results the request carries."""
    first = body["messages"][0]["content"]
    text = first if isinstance(first, str) else "".join(b.get("text", "") for b in first)
    results = sum(
        1
        for m in body["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    )
    return text, results


def respond(body: dict[str, Any]) -> Reply:
    text, results = _texts(body)
    if text.startswith(PARENT):
        if not results:
            task = {"prompt": "alpha: look around", "name": "alpha"}
            return Reply(text="Delegating.", tool_calls=[ToolCall("task", task)], output_tokens=10)
        return Reply(text="All done.", output_tokens=5)
    if not results:
        call = ToolCall("glob", {"pattern": "*"})
        return Reply(text="alpha starts.", tool_calls=[call], output_tokens=30)
    return Reply(text="alpha done.", output_tokens=5)


@pytest.fixture
def tree_env(monkeypatch: pytest.MonkeyPatch, fake: FakeAnthropic) -> Iterator[FakeAnthropic]:
    """Children are processes: they find the fake through the environment, as the SDK does."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
    fake.responder = respond
    yield fake


async def test_a_child_reaching_the_budget_passed_down_pauses_the_parent_for_it(
    tmp_path: Path, tree_env: FakeAnthropic
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    config = PodConfig.model_validate(
        {
            "workspace": workspace,
            "name": "t",
            "provider": "anthropic",
            "model": "fake-model",
            "checkpoints": False,
            "permissions": {"mode": "accept-edits"},
            "prices": {"fake-model": Prices(input=0.0, output=1_000_000.0)},
            "budget_usd": 20.0,
        }
    )
    provider = fake_provider(tree_env)
    async with running_pod(workspace, tmp_path, provider=provider, loaded=config):
        c = await PodClient.connect(tmp_path / "pod.sock")
        await c.send("run", {"input": f"{PARENT} delegate"})
        events = await collect_until(c, "run_end", timeout=120)
        assert events[-1].data == {"result": "paused", "pause_reason": "budget"}
        said = [
            e.data["message"] for e in events if e.event == "alert" and e.data["source"] == "budget"
        ]
        assert said and "child pod" in said[-1] and "budget_usd $20.0000" in said[-1]
        status = (await c.request("get_status")).data
        assert status["pause_reason"] == "budget"
        # The parent's $10 and the child's $30: the child had $10 left to spend, and its
        # first reply (its calls not run) passed it.
        assert status["budget"]["spent_usd"] == pytest.approx(40.0)
        child_requests = [r for r in tree_env.requests if r.path == "/v1/messages"
                          and not _texts(r.body)[0].startswith(PARENT)]  # fmt: skip
        assert len(child_requests) == 1

        # Resuming without a raise pauses again at once, sending nothing.
        sent = len(tree_env.requests)
        await c.send("resume")
        events = await collect_until(c, "run_end", timeout=60)
        assert events[-1].data == {"result": "paused", "pause_reason": "budget"}
        assert len(tree_env.requests) == sent

        await c.request("set_budget", {"budget_usd": 100.0})
        await c.send("resume")
        events = await collect_until(c, "run_end", timeout=120)
        assert events[-1].data == {"result": "finished"}
        status = (await c.request("get_status")).data
        assert status["budget"]["spent_usd"] == pytest.approx(50.0)  # + child 5, parent 5
        await c.close()
    await provider.aclose()
    requests = [r for r in tree_env.requests if r.path == "/v1/messages"]
    assert all(r.valid and r.status == 200 for r in requests), [r.error for r in requests]
