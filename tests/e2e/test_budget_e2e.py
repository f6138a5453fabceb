"""Budgets that pause (docs/budgets.md), through the protocol as a client drives them: a cap
reached after a response pauses the turn before its calls run, a request that would start
past a cap is never sent, ``resume`` without a raise pauses again sending nothing, and
``set_budget`` + ``resume`` finishes the turn; the paused session is wire-valid throughout.

Prices are set so the arithmetic is plain: output at $1 a token (a response of 100 tokens
costs $100), input at $1 per million; or the other way round."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

from orchestrator.core.history import UserMessage, item_from_json
from orchestrator.core.repair import close_orphans, interrupt_note
from orchestrator.core.segments import TextSegment
from orchestrator.core.validator import validate_wire
from orchestrator.core.wire import to_wire
from orchestrator.serving.client import PodClient, PodEvent
from tests.e2e.harness import (
    ScriptedReply,
    ScriptedToolCall,
    collect_until,
    running_pod,
    start_pod_process,
)

MODEL = "claude-sonnet-4-6"
DEAR_OUTPUT = {MODEL: {"input": 1.0, "output": 1_000_000.0}}
DEAR_INPUT = {MODEL: {"input": 1_000_000.0, "output": 1.0}}
LONG_TEXT = "x" * 400  # 100 output tokens: $100 at DEAR_OUTPUT


def wire_valid_when_closed(items: list[dict[str, Any]]) -> list[Any]:
    """The violations of the history as the next request would send it, the paused turn
    closed as a new prompt closes it (orphans answered, the note injected)."""
    parsed = [item_from_json(i) for i in items]
    extra: list[Any] = [*close_orphans(parsed), interrupt_note()]
    extra.append(UserMessage(segments=[TextSegment(text="next")], text="next"))
    return validate_wire(to_wire(parsed + extra))


def budget_alerts(events: list[PodEvent]) -> list[str]:
    return [
        e.data["message"] for e in events if e.event == "alert" and e.data["source"] == "budget"
    ]


async def _history(c: PodClient) -> list[dict[str, Any]]:
    return list((await c.request("get_history")).data["items"])


async def test_a_turn_budget_reached_by_a_response_pauses_before_its_calls_run(
    workspace: Path, short_dir: Path
) -> None:
    replies = [
        ScriptedReply(
            text=LONG_TEXT, tool_calls=[ScriptedToolCall(name="glob", input={"pattern": "*"})]
        ),
        ScriptedReply(text="done"),
    ]
    async with running_pod(
        workspace, short_dir, replies=replies, prices=DEAR_OUTPUT, turn_budget_usd=50.0
    ) as pod:
        c = await pod.client()
        await c.send("run", {"input": "list the files"})
        events = await collect_until(c, "run_end", timeout=30)
        assert events[-1].data == {"result": "paused", "pause_reason": "budget"}
        [said] = budget_alerts(events)
        assert "turn_budget_usd $50.0000" in said and "pod budget set --turn-budget-usd" in said
        # The response is committed; its call never started.
        assert not [e for e in events if e.event == "tool_result"]
        assert len(pod.provider.requests) == 1
        status = (await c.request("get_status")).data
        assert (status["status"], status["pause_reason"]) == ("paused", "budget")
        assert status["budget"]["turn_spent_usd"] >= 50.0
        assert wire_valid_when_closed(await _history(c)) == []

        # Resuming without raising: the same alert at once, nothing sent, nothing run.
        await c.send("resume")
        events = await collect_until(c, "run_end", timeout=30)
        assert events[-1].data == {"result": "paused", "pause_reason": "budget"}
        assert budget_alerts(events) == [said]
        assert len(pod.provider.requests) == 1
        assert not [e for e in events if e.event == "tool_result"]

        reply = await c.request("set_budget", {"turn_budget_usd": 1000.0})
        assert reply.event == "status" and reply.data["budget"]["turn_budget_usd"] == 1000.0
        assert reply.data["budget"]["budget_usd"] is None  # a key left out keeps its cap
        await c.send("resume")
        events = await collect_until(c, "run_end", timeout=30)
        assert events[-1].data == {"result": "finished"}
        assert [e for e in events if e.event == "tool_result"]
        assert len(pod.provider.requests) == 2
        pod.assert_all_requests_valid()
        status = (await c.request("get_status")).data
        assert status["pause_reason"] is None
        await c.close()


async def test_a_request_that_would_start_past_the_session_budget_is_never_sent(
    workspace: Path, short_dir: Path
) -> None:
    async with running_pod(
        workspace,
        short_dir,
        replies=[ScriptedReply(text="hello")],
        prices=DEAR_INPUT,
        budget_usd=5.0,
    ) as pod:
        c = await pod.client()
        await c.send("run", {"input": "hi"})
        events = await collect_until(c, "run_end", timeout=30)
        assert events[-1].data == {"result": "paused", "pause_reason": "budget"}
        [said] = budget_alerts(events)
        assert "the session's budget_usd $5.0000" in said
        assert "next request's input alone costs about" in said
        assert pod.provider.requests == []  # nothing sent: the input alone passes the cap
        assert wire_valid_when_closed(await _history(c)) == []

        # Removing the cap (null) lets it go on.
        reply = await c.request("set_budget", {"budget_usd": None})
        assert reply.data["budget"]["budget_usd"] is None
        await c.send("resume")
        events = await collect_until(c, "run_end", timeout=30)
        assert events[-1].data == {"result": "finished"}
        assert len(pod.provider.requests) == 1
        pod.assert_all_requests_valid()
        await c.close()


async def test_set_budget_refuses_what_is_no_amount_and_changes_nothing(
    workspace: Path, short_dir: Path
) -> None:
    async with running_pod(workspace, short_dir, budget_usd=2.0) as pod:
        c = await pod.client()
        for params in ({}, {"budget_usd": -1}, {"budget_usd": "inf"}, {"budget_usd": "nan"},
                       {"budget_usd": True, "x": 1}):  # fmt: skip
            reply = await c.request("set_budget", params)
            assert (reply.event, reply.data["code"]) == ("error", "invalid_request"), params
        # NaN and Infinity as JSON literals (Python's parser takes them) are refused too.
        await c.send_raw(b'{"method":"set_budget","params":{"budget_usd":NaN},"id":9}\n')
        refused = await collect_until(c, "error", timeout=10, id=9)
        assert refused[-1].data["code"] == "invalid_request"
        status = (await c.request("get_status")).data
        assert status["budget"]["budget_usd"] == 2.0
        await c.close()
        assert pod.provider.requests == []


async def test_a_budget_change_reaches_every_client(workspace: Path, short_dir: Path) -> None:
    async with running_pod(workspace, short_dir) as pod:
        watcher = await pod.client()
        c = await pod.client()
        await c.request("set_budget", {"turn_budget_usd": 0.25})
        events = await collect_until(watcher, "status", timeout=10)
        while events[-1].data.get("budget", {}).get("turn_budget_usd") != 0.25:
            events = await collect_until(watcher, "status", timeout=10)
        assert events[-1].data["budget"] == {
            "budget_usd": None,
            "turn_budget_usd": 0.25,
            "spent_usd": 0.0,
            "turn_spent_usd": 0.0,
        }
        await watcher.close()
        await c.close()


def _script(path: Path, replies: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps({"replies": replies}))
    return path


async def test_a_pod_killed_while_paused_at_its_budget_comes_back_paused_for_it(
    workspace: Path, short_dir: Path
) -> None:
    user = Path(os.environ["XDG_CONFIG_HOME"]) / "pod" / "config.toml"
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text(f'[prices."{MODEL}"]\ninput = 1.0\noutput = 1000000.0\n')
    log = workspace / "ran.log"
    call = {"name": "bash", "input": {"command": f"echo ran >> {log}"}}
    script = _script(short_dir / "script.json", [{"text": LONG_TEXT, "tool_calls": [call]}])
    socket, session = short_dir / "p.sock", short_dir / "session.jsonl"
    budget = ("--turn-budget-usd", "50")
    proc = start_pod_process(workspace, socket, session, script, *budget)
    try:
        c = await PodClient.connect(socket)
        await c.send("run", {"input": "run it"})
        events = await collect_until(c, "run_end", timeout=60)
        assert events[-1].data == {"result": "paused", "pause_reason": "budget"}
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        await c.close()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert not log.exists()

    _script(script, [{"text": "done"}])
    proc = start_pod_process(workspace, socket, session, script, "--continue", *budget)
    try:
        c = await PodClient.connect(socket)
        status = (await c.request("get_status")).data
        assert (status["status"], status["pause_reason"]) == ("paused", "budget")
        assert status["budget"]["turn_spent_usd"] >= 50.0  # the paused turn's spend, reloaded
        assert wire_valid_when_closed(await _history(c)) == []
        await c.send("resume")
        events = await collect_until(c, "run_end", timeout=60)
        assert events[-1].data == {"result": "paused", "pause_reason": "budget"}
        await c.request("set_budget", {"turn_budget_usd": 500.0})
        await c.send("resume")
        events = await collect_until(c, "run_end", timeout=60)
        assert events[-1].data == {"result": "finished"}
        await c.send("shutdown")
        await c.close()
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert log.read_text() == "ran\n"  # the call ran once, after the raise


async def test_a_cap_on_a_model_without_a_price_is_refused_naming_the_key(
    workspace: Path, short_dir: Path
) -> None:
    async with running_pod(workspace, short_dir, model="claude-unpriced-9") as pod:
        c = await pod.client()
        reply = await c.request("set_budget", {"turn_budget_usd": 1.0})
        assert (reply.event, reply.data["code"]) == ("error", "invalid_request")
        assert '[prices."claude-unpriced-9"]' in reply.data["message"]
        status = (await c.request("get_status")).data
        assert status["budget"]["turn_budget_usd"] is None
        # Removing a cap asks for no price.
        assert (await c.request("set_budget", {"budget_usd": None})).event == "status"
        await c.close()


async def test_a_compaction_is_not_started_past_a_budget(workspace: Path, short_dir: Path) -> None:
    async with running_pod(
        workspace, short_dir, replies=[ScriptedReply(text="hi")], turn_budget_usd=0.0
    ) as pod:
        c = await pod.client()
        await c.send("run", {"input": "hello"})
        events = await collect_until(c, "run_end", timeout=30)
        assert events[-1].data == {"result": "paused", "pause_reason": "budget"}
        await c.send("compact")
        said = await collect_until(c, "alert", timeout=30, source="compaction")
        assert said[-1].data["message"].startswith("not compacted: the budget is reached")
        assert "pod budget set --turn-budget-usd" in said[-1].data["message"]
        status = (await c.request("get_status")).data
        assert (status["status"], status["pause_reason"]) == ("paused", "budget")
        assert pod.provider.requests == []  # no summary request either
        await c.close()


async def test_budgets_set_by_set_budget_survive_a_restart_unless_new_ones_are_given(
    workspace: Path, short_dir: Path
) -> None:
    replies = [ScriptedReply(text="hi")]
    async with running_pod(workspace, short_dir, replies=replies, budget_usd=1.0) as pod:
        c = await pod.client()
        await c.send("run", {"input": "hello"})  # a session with a conversation is kept
        await collect_until(c, "run_end", timeout=30)
        await c.request("set_budget", {"budget_usd": 10.0, "turn_budget_usd": 0.5})
        await c.close()
    # The same configured budget: the session's change is taken back.
    async with running_pod(workspace, short_dir, continue_=True, budget_usd=1.0) as pod:
        c = await pod.client()
        budget = (await c.request("get_status")).data["budget"]
        assert (budget["budget_usd"], budget["turn_budget_usd"]) == (10.0, 0.5)
        await c.close()
    # A budget given anew at the start wins over what the session had.
    async with running_pod(workspace, short_dir, continue_=True, budget_usd=2.0) as pod:
        c = await pod.client()
        budget = (await c.request("get_status")).data["budget"]
        assert (budget["budget_usd"], budget["turn_budget_usd"]) == (2.0, None)
        await c.close()
