"""The fallback model over the real SDK and HTTP: the fake Messages API answers 529 (or 404)
for the pod's model, and the same request goes to ``fallback_model``, made wire-valid for it."""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from typing import Any

from conformance.fake_api import DEFAULT_MODELS, FakeAnthropic, Fault, ModelSpec, Reply, ToolCall
from orchestrator.config.model import PodConfig
from orchestrator.core.prompt_cache import without_breakpoints
from orchestrator.core.usage import TokenUsage
from tests.e2e.harness import collect_until, fake_provider, running_pod

PRIMARY = "claude-sonnet-4-6"  # adaptive thinking, web tools
FALLBACK = "claude-3-5-haiku"  # no thinking, no server tools, a price of its own


def _records(session: Path, kind: str) -> list[dict[str, Any]]:
    lines = session.read_text().splitlines()[1:]
    return [r for r in map(json.loads, lines) if r.get("type") == kind]


def _assistant_models(session: Path) -> list[object]:
    return [
        r["item"].get("model")
        for r in _records(session, "item")
        if isinstance(r.get("item"), dict) and r["item"].get("kind") == "assistant"
    ]


async def test_overloaded_model_falls_back_for_the_rest_of_the_turn(
    workspace: Path, short_dir: Path, fake: FakeAnthropic
) -> None:
    (workspace / "README.md").write_text("hello\n")
    fake.push(
        # Turn 1 on the pod's model, thinking in a tool loop.
        Reply(thinking="Read it first.", tool_calls=[ToolCall("read_file", {"path": "README.md"})]),
        Reply(thinking="Done reading.", text="It says hello."),
        # Turn 2: the pod's model is overloaded; these two answer as the fallback.
        Reply(text="Reading again.", tool_calls=[ToolCall("read_file", {"path": "README.md"})]),
        Reply(text="Still hello."),
        # Turn 3: the pod's model is back.
        Reply(text="Back on the first model."),
    )
    provider = fake_provider(fake, model=PRIMARY)
    async with running_pod(
        workspace, short_dir, provider=provider, model=PRIMARY, fallback_model=FALLBACK
    ) as pod:
        c = await pod.client()
        await c.send("run", {"input": "read the readme"})
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "finished"}

        fake.model_faults[PRIMARY] = Fault(status=529)
        await c.send("run", {"input": "read it again"})
        events = await collect_until(c, "run_end", timeout=30)
        assert events[-1].data == {"result": "finished"}
        said = [e.data["message"] for e in events if e.event == "alert"]
        switched = [m for m in said if "fallback model" in m]
        assert len(switched) == 1, said
        assert PRIMARY in switched[0] and FALLBACK in switched[0] and "overloaded" in switched[0]

        status = (await c.request("get_status")).data
        fake.model_faults.clear()
        await c.send("run", {"input": "and now?"})
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "finished"}
        await c.close()
    await provider.aclose()

    requests = fake.requests
    assert all(r.valid for r in requests), [r.error for r in requests if not r.valid]
    models = [r.body["model"] for r in requests]
    retries = provider.max_retries + 1
    assert models == [PRIMARY] * 2 + [PRIMARY] * retries + [FALLBACK] * 2 + [PRIMARY]
    first_fallback = requests[2 + retries]
    # The same request: the conversation the failed one carried, thinking settings the
    # fallback takes (none) and no web tools it lacks.
    failed = requests[1 + retries]
    assert failed.status == 529
    sent = without_breakpoints(first_fallback.body["messages"])
    original = without_breakpoints(failed.body["messages"])
    assert [m["role"] for m in sent] == [m["role"] for m in original]
    assert sent[-1] == original[-1]
    assert "thinking" not in first_fallback.body and "thinking" in failed.body
    assert all(not t.get("type", "").startswith("web_") for t in first_fallback.body["tools"])
    # Turn 1's thinking is older than the latest assistant message: left out for a model
    # that does not think.
    kinds = [b["type"] for m in sent if m["role"] == "assistant" for b in m["content"]]
    assert "thinking" not in kinds

    session = Path(status["session"])
    fallbacks = _records(session, "fallback")
    assert [(r["turn"], r["model"], r["from_model"], r["cause"]) for r in fallbacks] == [
        (2, FALLBACK, PRIMARY, "overloaded")
    ]
    assert _assistant_models(session) == [None, None, FALLBACK, FALLBACK, None]
    # Each model's tokens at its own prices.
    config = PodConfig(workspace=workspace)
    primary, fallback = config.model_prices(PRIMARY), config.model_prices(FALLBACK)
    assert primary is not None and fallback is not None and primary != fallback
    expected = 0.0
    for r in _records(session, "item"):
        item = r["item"]
        if isinstance(item, dict) and item.get("kind") == "assistant" and item["turn"] <= 2:
            prices = fallback if item.get("model") == FALLBACK else primary
            expected += prices.cost(TokenUsage(**item["usage"]))
    assert status["cost_usd"] == round(expected, 6)
    # All at the pod's model's prices it would be dearer: the fallback's are lower.
    assert status["cost_usd"] < round(primary.cost(TokenUsage(**status["usage"])), 6)


async def test_a_model_not_found_falls_back_and_a_refusal_does_not(
    workspace: Path, short_dir: Path, fake: FakeAnthropic
) -> None:
    fake.model_faults["claude-retired-1"] = Fault(status=404)
    fake.push(Reply(text="the fallback answers"))
    provider = fake_provider(fake, model="claude-retired-1")
    async with running_pod(
        workspace, short_dir, provider=provider, model="claude-retired-1", fallback_model=PRIMARY
    ) as pod:
        c = await pod.client()
        await c.send("run", {"input": "hi"})
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "finished"}
        said = [e.data["message"] for e in events if e.event == "alert"]
        assert any("not_found" in m and "claude-retired-1" in m for m in said), said
        # A request the API refuses (a 400) is not a cause: no other model is asked.
        fake.model_faults[PRIMARY] = Fault(status=400, message="messages: bad")
        fake.model_faults["claude-retired-1"] = Fault(status=400, message="messages: bad")
        await c.send("run", {"input": "again"})
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "errored"}
        await c.close()
    await provider.aclose()
    # A 404 is not retried: one request to the missing model, then the fallback's.
    assert [r.body["model"] for r in fake.requests[:2]] == ["claude-retired-1", PRIMARY]
    assert [r.body["model"] for r in fake.requests[2:]] == ["claude-retired-1"]


async def test_fallback_on_narrows_the_causes(
    workspace: Path, short_dir: Path, fake: FakeAnthropic
) -> None:
    fake.model_faults[PRIMARY] = Fault(status=500)
    provider = fake_provider(fake, model=PRIMARY)
    async with running_pod(
        workspace,
        short_dir,
        provider=provider,
        model=PRIMARY,
        fallback_model=FALLBACK,
        fallback_on=["overloaded"],
    ) as pod:
        c = await pod.client()
        await c.send("run", {"input": "hi"})
        events = await collect_until(c, "run_end", timeout=30)
        assert events[-1].data == {"result": "errored"}
        await c.close()
    await provider.aclose()
    assert {r.body["model"] for r in fake.requests} == {PRIMARY}


async def test_a_paused_fallback_turn_resumes_on_the_fallback_after_a_restart(
    workspace: Path, short_dir: Path, fake: FakeAnthropic
) -> None:
    (workspace / "README.md").write_text("hello\n")
    fake.model_faults[PRIMARY] = Fault(status=529)
    fake.push(
        Reply(text="Reading.", tool_calls=[ToolCall("read_file", {"path": "README.md"})]),
        Reply(text="z" * 300, chunk_size=3, delay_s=0.01),
        Reply(text="Finished on the fallback."),
    )
    provider = fake_provider(fake, model=PRIMARY)
    async with running_pod(
        workspace, short_dir, provider=provider, model=PRIMARY, fallback_model=FALLBACK
    ) as pod:
        c = await pod.client()
        await c.send("run", {"input": "read the readme"})
        await c.wait_for("tool_result")
        await c.wait_for("text_delta")
        await c.send("pause")
        events = await collect_until(c, "run_end", timeout=30)
        assert events[-1].data == {"result": "paused"}
        status = (await c.request("get_status")).data
        cost, session = status["cost_usd"], Path(status["session"])
        await c.close()
        # The pod dies (a shutdown would close the paused turn): its next start finds the
        # turn open, as after a crash or an unload.
        pod.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await pod.task
    await provider.aclose()
    before = len(fake.requests)

    provider = fake_provider(fake, model=PRIMARY)
    async with running_pod(
        workspace,
        short_dir,
        provider=provider,
        model=PRIMARY,
        fallback_model=FALLBACK,
        session=session,
        continue_=True,
    ):
        c = await pod.client()
        status = (await c.request("get_status")).data
        assert status["cost_usd"] == cost  # the fallback's message still at its prices
        assert status["status"] == "paused"
        await c.send("resume")
        events = await collect_until(c, "run_end", timeout=30)
        assert events[-1].data == {"result": "finished"}
        await c.close()
    await provider.aclose()
    # The paused turn went on where it was: straight to the fallback, no 529 first.
    resumed = fake.requests[before:]
    assert [r.body["model"] for r in resumed] == [FALLBACK]
    assert all(r.valid for r in fake.requests)


async def test_a_fallback_that_fails_too_ends_the_turn_saying_so(
    workspace: Path, short_dir: Path, fake: FakeAnthropic
) -> None:
    fake.model_faults[PRIMARY] = Fault(status=529)
    fake.model_faults[FALLBACK] = Fault(status=500)
    provider = fake_provider(fake, model=PRIMARY)
    async with running_pod(
        workspace, short_dir, provider=provider, model=PRIMARY, fallback_model=FALLBACK
    ) as pod:
        c = await pod.client()
        await c.send("run", {"input": "hi"})
        events = await collect_until(c, "run_end", timeout=30)
        assert events[-1].data == {"result": "errored"}
        [error] = [e.data["message"] for e in events if e.event == "error"]
        assert f"the fallback model {FALLBACK} failed too" in error and "500" in error
        await c.close()
    await provider.aclose()
    # Each model had its retries; the fallback's failure did not send anything back.
    retries = provider.max_retries + 1
    assert [r.body["model"] for r in fake.requests] == [PRIMARY] * retries + [FALLBACK] * retries


async def test_a_request_larger_than_the_fallbacks_window_is_not_sent_to_it(
    workspace: Path, short_dir: Path
) -> None:
    with FakeAnthropic(
        models=[*DEFAULT_MODELS, ModelSpec(id="claude-tiny", context_window=50)]
    ) as fake:
        fake.model_faults[PRIMARY] = Fault(status=529)
        provider = fake_provider(fake, model=PRIMARY)
        async with running_pod(
            workspace, short_dir, provider=provider, model=PRIMARY, fallback_model="claude-tiny"
        ) as pod:
            c = await pod.client()
            await c.send("run", {"input": "hi"})
            events = await collect_until(c, "run_end", timeout=30)
            assert events[-1].data == {"result": "errored"}
            said = [e.data["message"] for e in events if e.event == "alert"]
            assert any("not falling back to claude-tiny" in m and "window" in m for m in said)
            await c.close()
        await provider.aclose()
    assert {r.body["model"] for r in fake.requests} == {PRIMARY}
