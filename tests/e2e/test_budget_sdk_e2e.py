"""Budgets over HTTP: the real anthropic SDK against the project's fake Messages API (every
request validated, tokens counted, the cache's 5-minute and 1-hour writes reported apart),
driven through the pod's socket. The spend is what the API's usage says, priced exactly; a
budget pauses the turn with the session wire-valid, and ``set_budget`` + ``resume`` ends it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from conformance.fake_api import FakeAnthropic, Reply, ToolCall
from conformance.models import ModelSpec
from orchestrator.core.prices import Prices
from orchestrator.core.usage import TokenUsage
from tests.e2e.harness import collect_until, fake_provider, running_pod

PRICES = Prices(input=3.0, output=1_000_000.0)  # output at $1 a token


@pytest.fixture
async def fake() -> AsyncIterator[FakeAnthropic]:
    server = FakeAnthropic(models=[ModelSpec(id="fake-model", context_window=200_000)]).start()
    try:
        yield server
    finally:
        server.stop()


async def test_a_budget_pauses_a_turn_over_the_real_sdk_and_set_budget_finishes_it(
    workspace: Path, short_dir: Path, fake: FakeAnthropic
) -> None:
    fake.push(
        Reply(
            text="Reading it. " * 20,
            tool_calls=[ToolCall("read_file", {"path": "src/app.py"}, id="toolu_read")],
            output_tokens=80,
        ),
        Reply(text="It returns 42.", output_tokens=5),
    )
    provider = fake_provider(fake)
    async with running_pod(
        workspace,
        short_dir,
        provider=provider,
        model="fake-model",
        prices={"fake-model": PRICES},
        prompt_cache="1h",
        turn_budget_usd=60.0,
    ) as pod:
        c = await pod.client()
        await c.send("run", {"input": "what does main return?"})
        events = await collect_until(c, "run_end", timeout=60)
        assert events[-1].data == {"result": "paused", "pause_reason": "budget"}
        usages = [e.data for e in events if e.event == "usage"]
        assert len(usages) == 1 and usages[0]["output_tokens"] == 80
        # The prefix was written as 1-hour entries, and the usage says so.
        assert usages[0]["one_hour_cache_writes"] > 0
        assert usages[0]["one_hour_cache_writes"] == usages[0]["cache_creation_input_tokens"]
        status = (await c.request("get_status")).data
        # Exactly what the API's usage costs: its 1-hour cache writes at the 1-hour price.
        spent = sum(PRICES.cost(TokenUsage(**u), ttl="1h") for u in usages)
        assert status["budget"]["turn_spent_usd"] == pytest.approx(spent, abs=1e-6)
        assert status["cost_usd"] == pytest.approx(spent, abs=1e-6)
        assert status["pause_reason"] == "budget"

        await c.request("set_budget", {"turn_budget_usd": 200.0})
        await c.send("resume")
        events = await collect_until(c, "run_end", timeout=60)
        assert events[-1].data == {"result": "finished"}
        assert "It returns 42." in "".join(
            e.data["text"] for e in events if e.event == "text_delta"
        )
        await c.close()
    await provider.aclose()

    requests = [r for r in fake.requests if r.path == "/v1/messages"]
    assert len(requests) == 2
    assert all(r.valid and r.status == 200 for r in requests), [r.error for r in requests]
