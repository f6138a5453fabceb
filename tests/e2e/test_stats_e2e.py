"""``get_stats`` through the protocol: each turn's tokens are what its ``usage`` events said,
its cost what the budget counted, the seconds by state come from the machine, and the turns
(from the session) survive a restart while the seconds count from the new start."""

from __future__ import annotations

from pathlib import Path

from orchestrator.protocol import StatsData
from orchestrator.serving.client import PodClient, PodEvent
from tests.e2e.harness import ScriptedReply, ScriptedToolCall, collect_until, running_pod

MODEL = "claude-sonnet-4-6"
PRICES = {MODEL: {"input": 3.0, "output": 15.0, "cache_read": 0.3, "cache_write": 3.75}}
KINDS = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens", "output_tokens")


def summed(events: list[PodEvent]) -> dict[str, int]:
    """The token counts of a run's ``usage`` events, by kind."""
    usages = [e.data for e in events if e.event == "usage"]
    return {kind: sum(u.get(kind, 0) for u in usages) for kind in KINDS}


async def one_run(c: PodClient, text: str) -> list[PodEvent]:
    await c.send("run", {"input": text})
    return await collect_until(c, "run_end", timeout=30)


async def test_stats_follow_the_turns_and_the_states(workspace: Path, short_dir: Path) -> None:
    replies = [
        ScriptedReply(text="first answer"),
        ScriptedReply(
            text="looking", tool_calls=[ScriptedToolCall(name="glob", input={"pattern": "*"})]
        ),
        ScriptedReply(text="second answer, after a call"),
    ]
    async with running_pod(
        workspace, short_dir, replies=replies, model=MODEL, prices=PRICES
    ) as pod:
        c = await pod.client()
        runs = [await one_run(c, "hello"), await one_run(c, "list the files")]
        stats = await c.stats()
        status = await c.status()
        assert isinstance(stats, StatsData)
        assert [row.turn for row in stats.turns] == [1, 2]
        assert [row.requests for row in stats.turns] == [
            sum(e.event == "usage" for e in run) for run in runs
        ]
        for row, run in zip(stats.turns, runs, strict=True):
            assert {kind: getattr(row, kind) for kind in KINDS} == summed(run)
            assert row.cost_usd is not None and row.cost_usd > 0
        # What the budget counted, request by request, as the turns were run.
        spent = status.budget.spent_usd
        assert spent > 0
        assert abs(sum(row.cost_usd or 0 for row in stats.turns) - spent) < 1e-6
        # The machine went through its states: idle at rest, the request and the tools in a
        # turn, each with the public status a client colours it by.
        assert {"idle", "requesting", "executing_tools"} <= set(stats.state_seconds)
        assert all(seconds >= 0 for seconds in stats.state_seconds.values())
        assert stats.status_of["idle"] == "idle"
        assert stats.status_of["requesting"] == stats.status_of["executing_tools"] == "running"
        assert stats.turns_omitted == 0
        await c.close()

    async with running_pod(
        workspace, short_dir, continue_=True, model=MODEL, prices=PRICES
    ) as again:
        c = await again.client()
        restarted = await c.stats()
        # The turns are the session's; the time counts from this start, where no turn ran.
        assert restarted.turns == stats.turns
        assert "requesting" not in restarted.state_seconds
        assert restarted.counting_since >= stats.counting_since
        await c.close()


async def test_a_reply_goes_to_the_asker_only(workspace: Path, short_dir: Path) -> None:
    async with running_pod(workspace, short_dir, replies=[]) as pod:
        asker, other = await pod.client(), await pod.client()
        await asker.send("get_stats", id="s1")
        await other.send("get_status", id="t1")
        got = await collect_until(asker, "stats", id="s1")
        assert got[-1].data["turns"] == []
        seen = await collect_until(other, "status", id="t1")
        assert "stats" not in [e.event for e in seen]
        await asker.close()
        await other.close()


async def test_an_unpriced_model_has_no_cost_but_its_tokens(
    workspace: Path, short_dir: Path
) -> None:
    async with running_pod(
        workspace, short_dir, replies=[ScriptedReply(text="hi")], model="a-local-model"
    ) as pod:
        c = await pod.client()
        run = await one_run(c, "hello")
        [row] = (await c.stats()).turns
        assert row.cost_usd is None
        assert {kind: getattr(row, kind) for kind in KINDS} == summed(run)
        await c.close()
