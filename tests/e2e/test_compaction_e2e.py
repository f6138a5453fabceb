"""Compaction over the real socket: on demand while idle, running and paused; interrupted by
pause, cancel and kill -9; the history is either as before or the compaction is whole."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from dataclasses import replace
from pathlib import Path
from typing import Any

from orchestrator.adapters.session import load_session
from orchestrator.core.tokens import estimate_message
from orchestrator.serving.client import PodClient
from tests.e2e.harness import (
    ScriptedReply,
    ScriptedToolCall,
    collect_until,
    running_pod,
    start_pod_process,
)
from tests.e2e.test_lifecycle_e2e import PauseBeforeTools

SLOW = ScriptedReply(text="w" * 300, chunk_size=3, chunk_delay_s=0.01)


def _kinds(items: list[dict[str, Any]]) -> list[str]:
    return [i["kind"] for i in items]


async def _turns(c: PodClient, n: int) -> None:
    for k in range(n):
        await c.send("run", {"input": f"turn {k}: tell me about @README.md"})
        await collect_until(c, "run_end")


async def test_compact_while_idle_summarises_and_returns_to_idle(
    workspace: Path, short_dir: Path
) -> None:
    replies = [ScriptedReply(text=f"answer {k} " + "long " * 400, chunk_size=500) for k in range(4)]
    async with running_pod(workspace, short_dir, replies=replies) as pod:
        c = await pod.client()
        await _turns(c, 3)
        await c.send("compact", {"focus": "the README"})
        events = await collect_until(c, "compaction")
        states = [e.data["state"] for e in events if e.event == "status"]
        assert states == ["compacting"]
        compaction = events[-1].data
        assert compaction["trigger"] == "manual"
        assert compaction["tokens_after"] < compaction["tokens_before"]
        await c.wait_for("status", state="idle")
        [summary_request] = [r for r in pod.provider.requests if r.purpose == "compaction"]
        assert (
            "Focus especially on: the README" in summary_request.messages[-1]["content"][-1]["text"]
        )
        await c.send("run", {"input": "and now?"})
        await collect_until(c, "run_end")
        last = pod.provider.requests[-1].messages
        # The view starts at the summary; the summarised turns are no longer sent.
        assert last[0]["content"][0]["text"].startswith("[Conversation summary")
        assert not any("answer 0 long" in json.dumps(m) for m in last)
        history = (await c.request("get_history")).data["items"]
        assert sum(1 for k in _kinds(history) if k == "user_message") == 4  # nothing dropped
        pod.assert_all_requests_valid()
        await c.close()


async def test_compact_while_paused_keeps_the_turn_paused_and_resumable(
    workspace: Path, short_dir: Path
) -> None:
    from orchestrator.capabilities.hooks.chain import InterceptorChain

    read = ScriptedToolCall(name="read_file", input={"path": "README.md"})
    replies = [
        ScriptedReply(text="first"),
        ScriptedReply(text="second"),
        ScriptedReply(tool_calls=[read]),
        ScriptedReply(text="done after resume"),
    ]
    chain = InterceptorChain(interceptors=[PauseBeforeTools()])
    async with running_pod(workspace, short_dir, replies=replies, interceptors=chain) as pod:
        pause_before = chain.interceptors[0]
        pause_before.armed = False  # type: ignore[attr-defined]
        c = await pod.client()
        await _turns(c, 2)
        pause_before.armed = True  # type: ignore[attr-defined]
        await c.send("run", {"input": "read the readme"})
        await c.wait_for("run_end", result="paused")
        await c.send("compact")
        await c.wait_for("compaction")
        status = await c.wait_for("status", state="paused")
        assert status.data["status"] == "paused"
        await c.send("resume")
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "finished"}
        results = [e.data for e in events if e.event == "tool_result"]
        assert len(results) == 1 and not results[0]["synthetic"]  # the pending call ran
        pod.assert_all_requests_valid()
        await c.close()


async def test_compact_while_running_happens_when_the_turn_allows(
    workspace: Path, short_dir: Path
) -> None:
    read = ScriptedToolCall(name="read_file", input={"path": "README.md"})
    replies = [
        ScriptedReply(text="warm up"),
        ScriptedReply(text="reading", tool_calls=[read], chunk_size=2, chunk_delay_s=0.01),
        ScriptedReply(text="done"),
        SLOW,
    ]
    async with running_pod(workspace, short_dir, replies=replies) as pod:
        c = await pod.client()
        await _turns(c, 1)
        # Mid-turn: it happens at the next round boundary, inside the turn (summarizing).
        await c.send("run", {"input": "read it"})
        await c.wait_for("text_delta")
        await c.send("compact")
        events = await collect_until(c, "run_end")
        names = [e.event for e in events]
        assert names.index("compaction") < names.index("run_end")
        assert "summarizing" in [e.data.get("state") for e in events if e.event == "status"]
        assert events[-1].data == {"result": "finished"}
        # Asked during a turn that then ends without another round: it happens right after.
        await c.send("run", {"input": "one more"})
        await c.wait_for("text_delta")
        await c.send("compact")
        await c.wait_for("run_end", result="finished")
        await c.wait_for("compaction")
        await c.wait_for("status", state="idle")
        pod.assert_all_requests_valid()
        await c.close()


async def test_pause_or_cancel_during_a_compaction_leaves_history_as_it_was(
    workspace: Path, short_dir: Path
) -> None:
    replies = [ScriptedReply(text=f"answer {k}") for k in range(3)]
    async with running_pod(workspace, short_dir, replies=replies) as pod:
        pod.provider.summary_delay_s = 0.02
        c = await pod.client()
        await _turns(c, 2)
        before = (await c.request("get_history")).data["items"]
        for stop in ("pause", "cancel"):
            await c.send("compact")
            await c.wait_for("status", state="compacting")
            await c.send(stop)
            await c.wait_for("status", state="idle")
            assert (await c.request("get_history")).data["items"] == before
        # And a compaction that is left alone completes.
        pod.provider.summary_delay_s = 0.0
        await c.send("compact")
        await c.wait_for("compaction")
        after = (await c.request("get_history")).data["items"]
        assert after[: len(before)] == before and _kinds(after)[len(before) :] == ["compaction"]
        await c.close()


async def test_pause_during_a_turns_compaction_then_resume_compacts_again(
    workspace: Path, short_dir: Path
) -> None:
    read = ScriptedToolCall(name="read_file", input={"path": "README.md"})
    replies = [
        ScriptedReply(text="warm up"),
        ScriptedReply(tool_calls=[read]),
        ScriptedReply(text="ok"),
    ]
    async with running_pod(workspace, short_dir, replies=replies) as pod:
        pod.provider.summary_delay_s = 0.02
        c = await pod.client()
        await _turns(c, 1)
        await c.send("run", {"input": "read it"})
        await c.send("compact")  # taken at the first round boundary of this turn
        await c.wait_for("status", state="summarizing")
        await c.send("pause")
        await c.wait_for("run_end", result="paused")
        history = (await c.request("get_history")).data["items"]
        assert "compaction" not in _kinds(history)
        pod.provider.summary_delay_s = 0.0
        await c.send("compact")  # paused: compacts now, between turns
        await c.wait_for("compaction")
        await c.wait_for("status", state="paused")
        await c.send("resume")
        await c.wait_for("run_end", result="finished")
        pod.assert_all_requests_valid()
        await c.close()


async def test_kill_9_during_a_compaction_leaves_it_whole_or_absent(
    workspace: Path, short_dir: Path
) -> None:
    script = short_dir / "script.json"
    replies = [{"text": f"answer {k}"} for k in range(3)]
    script.write_text(json.dumps({"replies": replies, "summary_delay_s": 0.05}))
    socket = short_dir / "p.sock"
    session = short_dir / "session.jsonl"
    proc = start_pod_process(workspace, socket, session, script)
    try:
        c = await PodClient.connect(socket)
        await _turns(c, 2)
        before = (await c.request("get_history")).data["items"]
        await c.send("compact")
        await c.wait_for("status", state="compacting")
        await asyncio.sleep(0.1)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        await c.close()
    finally:
        if proc.poll() is None:
            proc.kill()
    loaded = load_session(session)
    assert not loaded.warnings  # no torn line: the compaction is one record, or none
    assert len(loaded.items) in (len(before), len(before) + 1)
    script.write_text(json.dumps({"replies": [{"text": "back"}]}))
    proc = start_pod_process(workspace, socket, session, script, "--continue")
    try:
        c = await PodClient.connect(socket)
        assert (await c.request("get_status")).data["status"] == "idle"
        await c.send("run", {"input": "still there?"})
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "finished"}  # the scripted pod validates requests
        await c.send("shutdown")
        await c.close()
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()


async def test_compact_and_an_interrupt_in_one_write_commit_nothing(
    workspace: Path, short_dir: Path
) -> None:
    """Issue 27 §7: the interrupt read in the same write as ``compact`` wins, as the table says."""
    replies = [ScriptedReply(text=f"answer {k}") for k in range(2)]
    async with running_pod(workspace, short_dir, replies=replies) as pod:
        c = await pod.client()
        await _turns(c, 2)
        before = (await c.request("get_history")).data["items"]
        for stop in ("pause", "cancel"):
            lines = [{"method": "compact"}, {"method": stop}, {"method": "get_status", "id": "s"}]
            await c.send_raw(b"".join(json.dumps(line).encode() + b"\n" for line in lines))
            await c.wait_for("status", id="s")
            await c.wait_for("status", state="idle")
            await asyncio.sleep(0.2)  # a compaction that slipped through would commit by now
            assert (await c.request("get_history")).data["items"] == before, stop
        assert not [r for r in pod.provider.requests if r.purpose == "compaction"]
        await c.close()


async def test_a_huge_attachment_is_compacted_away_and_the_session_goes_on(
    workspace: Path, short_dir: Path
) -> None:
    """Issue 27 §7: a 10 MB attached file must not make every later turn fail."""
    (workspace / "big.txt").write_text("a line of a big file\n" * 500_000)
    replies = [ScriptedReply(text=f"answer {k}") for k in range(3)]
    async with running_pod(
        workspace,
        short_dir,
        replies=replies,
        context_window=60_000,
        compact_keep_tokens=1_000,
        file_ref_max_bytes=11_000_000,
    ) as pod:
        # The API's window is smaller than the pod believes: the refusal names it, the pod
        # takes it, and every summary request it sends must fit it.
        pod.provider.window = 9_000
        c = await pod.client()
        await c.send("run", {"input": "read @big.txt"})
        first = await collect_until(c, "run_end")
        assert first[-1].data == {"result": "errored"}
        [error] = [e.data["message"] for e in first if e.event == "error"]
        assert "latest message alone does not fit" in error and "next message compacts" in error
        alerts = [e.data["message"] for e in first if e.event == "alert"]
        assert any("context window is 9,000 tokens" in a for a in alerts), alerts
        for question in ("what did it say?", "and then?"):
            await c.send("run", {"input": question})
            events = await collect_until(c, "run_end")
            assert events[-1].data == {"result": "finished"}, [
                e.data for e in events if e.event in ("error", "alert")
            ]
        summaries = [r for r in pod.provider.requests if r.purpose == "compaction"]
        assert summaries
        sent = json.dumps(summaries[-1].messages)
        assert "bytes left out of this summary request" in sent
        assert len(sent) < 9_000 * 3.5  # what the API took: within its window
        history = (await c.request("get_history")).data["items"]
        assert _kinds(history).count("compaction") == 1
        pod.assert_all_requests_valid()
        await c.close()


def _write_long_session(path: Path, workspace: Path, turns: int) -> None:
    """An uncompacted session of ``turns`` tool-using turns, written as a pod would have."""
    from orchestrator.adapters.session import SessionHeader
    from orchestrator.core.history import (
        AssistantMessage,
        TextBlock,
        ToolResult,
        ToolUseBlock,
        UserMessage,
        item_to_json,
    )

    lines = [SessionHeader(pod="t", workspace=str(workspace), created_ms=1).model_dump_json()]
    seq = 0
    for turn in range(1, turns + 1):
        call = ToolUseBlock(id=f"toolu_{turn}", name="read_file", input={"path": "README.md"})
        for item in (
            UserMessage(text=f"question {turn}"),
            AssistantMessage(blocks=[TextBlock(text="reading"), call], stop_reason="tool_use"),
            ToolResult(call_id=call.id, summary="read 3 lines", content="r" * 400),
            AssistantMessage(blocks=[TextBlock(text=f"answer {turn}")]),
        ):
            seq += 1
            stamped = item_to_json(replace(item, seq=seq, turn=turn))
            lines.append(json.dumps({"type": "item", "item": stamped}))
        lines.append(json.dumps({"type": "turn_end", "turn": turn, "result": "finished"}))
    path.write_text("\n".join(lines) + "\n")


async def test_a_session_far_over_the_window_comes_up_and_compacts(
    workspace: Path, short_dir: Path
) -> None:
    """Issue 29: a long uncompacted session must come up and compact, not freeze (how long the
    pod makes clients wait meanwhile is measured in bench/context_economy.py)."""
    session = workspace.parent / "long.jsonl"
    _write_long_session(session, workspace, turns=3_000)  # ~1.4M tokens; the window is 20k
    replies = [ScriptedReply(text="carrying on")]
    async with running_pod(
        workspace, short_dir, replies=replies, session=session, context_window=20_000
    ) as pod:
        c = await pod.client()
        await c.send("run", {"input": "where were we?"})
        seen: list[str] = []
        while not seen or seen[-1] != "idle":
            seen.append((await c.request("get_status")).data["state"])
        assert {"requesting", "summarizing"} & set(seen[:-1])
        history = (await c.request("get_history")).data["items"]
        assert _kinds(history)[-3:] == ["user_message", "compaction", "assistant"]
        [summary_request] = [r for r in pod.provider.requests if r.purpose == "compaction"]
        sent = sum(estimate_message(m) for m in summary_request.messages)
        assert sent <= 20_000 * 0.8  # the summarised turns, cut down to what fits
        pod.assert_all_requests_valid()
        await c.close()


async def test_an_automatic_compaction_that_would_not_shrink_is_not_committed_and_said(
    workspace: Path, short_dir: Path
) -> None:
    # A window so small that every request is due for compaction, and a history so short
    # that the summary with what is kept comes out bigger than what it replaces.
    replies = [ScriptedReply(text=f"answer {k}") for k in range(4)]
    async with running_pod(
        workspace, short_dir, replies=replies, context_window=8000, compact_at=0.05
    ) as pod:
        c = await pod.client()
        alerts: list[dict[str, Any]] = []
        for k in range(4):
            await c.send("run", {"input": f"turn {k}: tell me about @README.md"})
            events = await collect_until(c, "run_end")
            assert events[-1].data == {"result": "finished"}
            alerts += [
                e.data for e in events if e.event == "alert" and e.data["source"] == "compaction"
            ]
        assert alerts, "no compaction was tried"
        for alert in alerts:
            assert alert["level"] == "warn"
            assert alert["message"].startswith("the summary would not make the context smaller (")
            assert alert["message"].endswith(
                "tokens), so it was not committed; the history stays as it was"
            )
        history = (await c.request("get_history")).data["items"]
        assert "compaction" not in _kinds(history)
        purposes = [r.purpose for r in pod.provider.requests]
        # A turn whose compaction came to nothing does not ask for another.
        assert "compaction, compaction" not in ", ".join(purposes)
        assert purposes.count("turn") == 4 and purposes.count("compaction") == len(alerts)
        pod.assert_all_requests_valid()
        await c.close()
