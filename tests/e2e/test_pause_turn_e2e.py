"""The API's own tool loop over the real socket: pause_turn continued at once, byte for byte;
pause, cancel, resume and a new prompt at each point of it; the mixed message.

The scripted provider refuses every request the API would refuse (core/validator.py), so a
run that ends ``finished`` sent only valid requests; the tests also check each request.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from orchestrator.adapters.providers.scripted_web import ScriptedCitation, ScriptedServerCall
from tests.e2e.harness import (
    RunningPod,
    ScriptedReply,
    ScriptedToolCall,
    collect_until,
    names,
    running_pod,
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
        first, second, third = pod.provider.requests
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
        assert (await collect_until(c, "run_end"))[-1].data == {"result": "cancelled"}
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


async def test_the_mixed_message_cancelled_at_its_approval_is_closed_both_ways(
    workspace: Path, short_dir: Path
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
        await c.send("cancel")
        assert (await collect_until(c, "run_end"))[-1].data == {"result": "cancelled"}
        kinds = [i["kind"] for i in await history(pod)]
        # The client call's result first, then the server call's closing content.
        assert kinds[-2:] == ["tool_result", "assistant"]
        await c.send("run", {"input": "next"})
        assert (await collect_until(c, "run_end"))[-1].data == {"result": "finished"}
        request = pod.provider.requests[-1]
        assistants = [m for m in request.messages if m["role"] == "assistant"]
        assert assistants[-1]["content"][0]["tool_use_id"] == "srvtoolu_m"
        pod.assert_all_requests_valid()
        await c.close()
