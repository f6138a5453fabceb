"""The API's own tool loop over the real socket: pause_turn continued at once, byte for byte;
pause, cancel, resume and a new prompt at each point of it; the mixed message.

The scripted provider refuses every request the API would refuse (core/validator.py), so a
run that ends ``finished`` sent only valid requests; the tests also check each request.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from orchestrator.adapters.providers.scripted_web import ScriptedCitation, ScriptedServerCall
from orchestrator.serving.client import PodClient
from tests.e2e.harness import (
    RunningPod,
    ScriptedReply,
    ScriptedToolCall,
    collect_until,
    names,
    running_pod,
    start_pod_process,
)


def searching(call_id: str, *, done: bool = True, text: str = "") -> ScriptedReply:
    """A reply that searches and stops with pause_turn (the call left open unless done)."""
    call = ScriptedServerCall(
        id=call_id, input={"query": call_id}, result="results" if done else "none"
    )
    return ScriptedReply(text=text, server_calls=[call], stop_reason="pause_turn")


ANSWER = ScriptedReply(
    text="Found it.",
    citations=[ScriptedCitation(url="https://example.com/", title="Example", cited_text="x")],
)
SLOW = ScriptedReply(text="y" * 400, chunk_size=4, chunk_delay_s=0.01)


def assistant_content(request_messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The blocks of the last assistant message of a request."""
    last = [m for m in request_messages if m["role"] == "assistant"][-1]
    content: list[dict[str, Any]] = last["content"]
    return content


async def history(pod: RunningPod) -> list[dict[str, Any]]:
    c = await pod.client()
    items: list[dict[str, Any]] = (await c.request("get_history")).data["items"]
    await c.close()
    return items


async def test_pause_turn_is_continued_at_once_and_sent_back_byte_for_byte(
    workspace: Path, short_dir: Path
) -> None:
    replies = [
        searching("srvtoolu_a", text="Looking."),
        searching("srvtoolu_b", done=False),
        ANSWER,
        ScriptedReply(text="You are welcome."),
    ]
    async with running_pod(workspace, short_dir, replies=replies) as pod:
        c = await pod.client()
        await c.send("run", {"input": "find it"})
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "finished"}
        # One turn, three requests: the continuations carry no new user message.
        assert names(events).count("turn_start") == 1
        assert names(events).count("server_tool_call") == 2
        _, second, third = pod.provider.requests
        assert second.messages[-1]["role"] == "assistant"
        assert third.messages[:-1] == second.messages[:-1]
        paused = second.messages[-1]["content"]
        assert third.messages[-1]["content"][: len(paused)] == paused
        # The API ran the call the second reply left open, at the opening of the third.
        items = await history(pod)
        answer = [i for i in items if i["kind"] == "assistant"][-1]
        assert answer["blocks"][0]["type"] == "web_search_tool_result"
        assert answer["blocks"][0]["tool_use_id"] == "srvtoolu_b"
        usage = sum(i.get("usage", {}).get("web_search_requests", 0) for i in items)
        assert usage == 2
        await c.send("run", {"input": "thanks"})
        assert (await collect_until(c, "run_end"))[-1].data == {"result": "finished"}
        fourth = pod.provider.requests[3]
        # Every block (encrypted content, citations) comes back as it was committed.
        continued = third.messages[-1]["content"]
        assert assistant_content(fourth.messages)[: len(continued)] == continued
        cited = [b for b in assistant_content(fourth.messages) if b.get("citations")]
        assert cited and cited[0]["citations"][0]["encrypted_index"].startswith("scripted-enc-")
        pod.assert_all_requests_valid()
        await c.close()


async def _paused_in_the_loop(pod: RunningPod) -> Any:
    """Run until the continuation streams, then pause; returns the client."""
    c = await pod.client()
    await c.send("run", {"input": "find it"})
    await c.wait_for("server_tool_call")
    await c.wait_for("text_delta")  # the continuation is streaming
    await c.send("pause")
    events = await collect_until(c, "run_end")
    assert events[-1].data == {"result": "paused"}
    return c


async def test_paused_during_a_continuation_resume_sends_it_again(
    workspace: Path, short_dir: Path
) -> None:
    replies = [searching("srvtoolu_a", done=False), SLOW, ANSWER]
    async with running_pod(workspace, short_dir, replies=replies) as pod:
        c = await _paused_in_the_loop(pod)
        before = await history(pod)
        assert before[-1]["stop_reason"] == "pause_turn"
        await c.send("resume")
        assert (await collect_until(c, "run_end"))[-1].data == {"result": "finished"}
        cut, resumed = pod.provider.requests[1], pod.provider.requests[2]
        assert resumed.messages == cut.messages  # the same continuation, nothing in between
        pod.assert_all_requests_valid()
        await c.close()


async def test_a_new_prompt_over_a_paused_loop_closes_the_open_call(
    workspace: Path, short_dir: Path
) -> None:
    replies = [searching("srvtoolu_a", done=False), SLOW, ScriptedReply(text="ok")]
    async with running_pod(workspace, short_dir, replies=replies) as pod:
        c = await _paused_in_the_loop(pod)
        await c.send("notify", {"text": "a note that waited"})
        await c.send("run", {"input": "something else"})
        assert (await collect_until(c, "run_end"))[-1].data == {"result": "finished"}
        request = pod.provider.requests[2]
        content = assistant_content(request.messages)
        # The paused content is kept; the call is closed by an error result after it.
        assert [b["type"] for b in content] == ["server_tool_use", "web_search_tool_result"]
        assert content[1]["content"] == {
            "type": "web_search_tool_result_error",
            "error_code": "unavailable",
        }
        assert request.messages[-1]["role"] == "user"
        pod.assert_all_requests_valid()
        await c.close()


async def test_cancel_inside_the_loop_leaves_a_valid_session(
    workspace: Path, short_dir: Path
) -> None:
    replies = [searching("srvtoolu_a", done=False), SLOW, ScriptedReply(text="ok")]
    async with running_pod(workspace, short_dir, replies=replies) as pod:
        c = await pod.client()
        await c.send("run", {"input": "find it"})
        await c.wait_for("server_tool_call")
        await c.wait_for("text_delta")
        await c.send("cancel")
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "cancelled"}
        # A client showing the search as running is told it ended.
        ended = [e.data for e in events if e.event == "server_tool_result"]
        assert ended == [
            {"id": "srvtoolu_a", "name": "web_search", "sources": [], "error_code": "unavailable"}
        ]
        items = await history(pod)
        closing = items[-1]
        assert closing["kind"] == "assistant" and closing["synthetic"]
        assert closing["blocks"][0]["tool_use_id"] == "srvtoolu_a"
        await c.send("run", {"input": "next"})
        assert (await collect_until(c, "run_end"))[-1].data == {"result": "finished"}
        pod.assert_all_requests_valid()
        await c.close()


MIXED = ScriptedReply(
    text="Searching and listing.",
    server_calls=[ScriptedServerCall(id="srvtoolu_m", input={"query": "q"}, result="none")],
    tool_calls=[ScriptedToolCall(name="glob", input={"pattern": "*.md"})],
)


async def test_the_mixed_message_runs_the_client_tools_and_the_api_answers_the_search(
    workspace: Path, short_dir: Path
) -> None:
    (workspace / "README.md").write_text("# hi\n")
    async with running_pod(workspace, short_dir, replies=[MIXED, ANSWER]) as pod:
        c = await pod.client()
        await c.send("run", {"input": "go"})
        assert (await collect_until(c, "run_end"))[-1].data == {"result": "finished"}
        second = pod.provider.requests[1]
        assert second.messages[-1]["content"][0]["type"] == "tool_result"
        items = await history(pod)
        answer = [i for i in items if i["kind"] == "assistant"][-1]
        assert answer["blocks"][0]["tool_use_id"] == "srvtoolu_m"  # opens the next content
        pod.assert_all_requests_valid()
        await c.close()


@pytest.mark.parametrize("how", ["cancel", "pause, then a new prompt"])
async def test_the_mixed_message_abandoned_at_its_approval_is_closed_both_ways(
    workspace: Path, short_dir: Path, how: str
) -> None:
    mixed = MIXED.model_copy(
        update={"tool_calls": [ScriptedToolCall(name="bash", input={"command": "echo hello"})]}
    )
    permissions = {"mode": "default"}
    replies = [mixed, ScriptedReply(text="ok")]
    async with running_pod(workspace, short_dir, replies=replies, permissions=permissions) as pod:
        c = await pod.client()
        await c.send("run", {"input": "go"})
        await c.wait_for("approval_request")
        if how == "cancel":
            await c.send("cancel")
            assert (await collect_until(c, "run_end"))[-1].data == {"result": "cancelled"}
            kinds = [i["kind"] for i in await history(pod)]
            # The client call's result first, then the server call's closing content.
            assert kinds[-2:] == ["tool_result", "assistant"]
        else:
            await c.send("pause")
            assert (await collect_until(c, "run_end"))[-1].data == {"result": "paused"}
            # Paused, the call waits to run on Resume; the server call stays open with it.
            assert (await history(pod))[-1]["kind"] == "assistant"
        await c.send("run", {"input": "next"})
        assert (await collect_until(c, "run_end"))[-1].data == {"result": "finished"}
        request = pod.provider.requests[-1]
        assistants = [m for m in request.messages if m["role"] == "assistant"]
        assert assistants[-1]["content"][0]["tool_use_id"] == "srvtoolu_m"
        pod.assert_all_requests_valid()
        await c.close()


async def test_kill_9_inside_the_loop_then_resume_and_a_new_prompt(
    workspace: Path, short_dir: Path
) -> None:
    """kill -9 while the continuation streams; restarted, the pod resumes by sending the
    continuation again, and later prompts are valid (the request log shows nothing refused)."""
    script = short_dir / "script.json"
    log = short_dir / "requests.jsonl"
    open_call = {
        "server_calls": [{"id": "srvtoolu_k", "input": {"query": "q"}, "result": "none"}],
        "stop_reason": "pause_turn",
    }
    slow = {"text": "z" * 2000, "chunk_size": 4, "chunk_delay_s": 0.02}
    script.write_text(json.dumps({"replies": [open_call, slow], "request_log": log.name}))
    socket, session = short_dir / "p.sock", short_dir / "session.jsonl"
    proc = start_pod_process(workspace, socket, session, script)
    try:
        c = await PodClient.connect(socket)
        await c.send("run", {"input": "find it"})
        await c.wait_for("server_tool_call")
        await c.wait_for("text_delta")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        await c.close()
    finally:
        if proc.poll() is None:
            proc.kill()
    replies = [{"text": "continued"}, {"text": "next answer"}]
    script.write_text(json.dumps({"replies": replies, "request_log": log.name}))
    proc = start_pod_process(workspace, socket, session, script, "--continue")
    try:
        c = await PodClient.connect(socket)
        assert (await c.request("get_status")).data["status"] == "paused"
        await c.send("resume")
        assert (await collect_until(c, "run_end"))[-1].data == {"result": "finished"}
        await c.send("run", {"input": "and now?"})
        assert (await collect_until(c, "run_end"))[-1].data == {"result": "finished"}
        items = (await c.request("get_history")).data["items"]
        opened = [i for i in items if i["kind"] == "assistant"][1]
        assert opened["blocks"][0]["tool_use_id"] == "srvtoolu_k"  # the API ran it on resume
        await c.send("shutdown")
        await c.close()
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    records = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    assert len(records) >= 4
    assert [r["refused"] for r in records] == [None] * len(records)


async def test_compact_then_resume_a_paused_loop_sends_the_continuation(
    workspace: Path, short_dir: Path
) -> None:
    replies = [
        ScriptedReply(text="an earlier answer " * 20),
        searching("srvtoolu_a", text="Looking."),
        searching("srvtoolu_b", done=False),
        SLOW,
        ANSWER,
    ]
    async with running_pod(workspace, short_dir, replies=replies) as pod:
        c = await pod.client()
        await c.send("run", {"input": "first"})
        assert (await collect_until(c, "run_end"))[-1].data == {"result": "finished"}
        await c.send("run", {"input": "find it"})
        await c.wait_for("server_tool_call", id="srvtoolu_b")
        await c.wait_for("text_delta")
        await c.send("pause")
        await c.wait_for("run_end", result="paused")
        await c.send("compact")
        await c.wait_for("compaction")
        await c.wait_for("status", status="paused")
        await c.send("resume")
        assert (await collect_until(c, "run_end"))[-1].data == {"result": "finished"}
        resumed = [r for r in pod.provider.requests if r.purpose == "turn"][-1]
        # The view after the summary starts where the loop's calls are, and ends with them.
        assert resumed.messages[-1]["role"] == "assistant"
        ids = [b.get("id") for b in resumed.messages[-1]["content"]]
        assert "srvtoolu_a" in ids and "srvtoolu_b" in ids
        pod.assert_all_requests_valid()
        await c.close()


async def test_rewind_from_a_paused_loop_goes_back_to_its_prompt(
    workspace: Path, short_dir: Path
) -> None:
    replies = [searching("srvtoolu_a", done=False), SLOW, ScriptedReply(text="again")]
    async with running_pod(workspace, short_dir, replies=replies) as pod:
        c = await _paused_in_the_loop(pod)
        prompt = next(i for i in await history(pod) if i["kind"] == "user_message")
        await c.send("rewind", {"to": prompt["seq"], "restore": "conversation"})
        await c.wait_for("rewound")
        await c.wait_for("status", status="idle")
        assert await history(pod) == []
        await c.send("run", {"input": "find it another way"})
        assert (await collect_until(c, "run_end"))[-1].data == {"result": "finished"}
        last = pod.provider.requests[-1]
        assert [m["role"] for m in last.messages] == ["user"]  # nothing of the loop is left
        pod.assert_all_requests_valid()
        await c.close()


async def test_a_server_loop_that_never_ends_stops_at_max_rounds(
    workspace: Path, short_dir: Path
) -> None:
    """Each continuation is a request: it counts against max_rounds, so a loop of pause_turn
    replies stops, and its open call is closed so the next prompt is valid."""
    loop = [searching(f"srvtoolu_{n}", done=False) for n in range(10)]
    replies = [*loop, ScriptedReply(text="fine")]
    async with running_pod(workspace, short_dir, replies=replies, max_rounds=3) as pod:
        c = await pod.client()
        await c.send("run", {"input": "search forever"})
        assert (await collect_until(c, "run_end"))[-1].data == {"result": "limit_reached"}
        assert len(pod.provider.requests) == 3
        items = await history(pod)
        assert items[-1]["synthetic"] and items[-1]["blocks"][0]["tool_use_id"] == "srvtoolu_2"
        pod.provider.replies = [ScriptedReply(text="fine")]
        await c.send("run", {"input": "stop searching"})
        assert (await collect_until(c, "run_end"))[-1].data == {"result": "finished"}
        pod.assert_all_requests_valid()
        await c.close()
