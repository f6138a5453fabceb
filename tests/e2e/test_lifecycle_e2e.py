"""End-to-end over the real socket: run, pause, resume, cancel, notify, clients, shutdown."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from orchestrator.adapters.session import load_session
from orchestrator.capabilities.hooks.chain import InterceptorChain
from orchestrator.core.history import INTERRUPT_NOTE, ToolUseBlock, item_to_json
from orchestrator.core.interceptors import BaseInterceptor, Continue, Pause, ToolAction
from tests.e2e.harness import ScriptedReply, ScriptedToolCall, collect_until, names, running_pod

SLOW_TEXT = ScriptedReply(text="x" * 400, chunk_size=4, chunk_delay_s=0.01)


async def test_run_to_finished_event_sequence(workspace: Path, short_dir: Path) -> None:
    reply = ScriptedReply(text="Hello there.", chunk_size=4)
    async with running_pod(workspace, short_dir, replies=[reply]) as pod:
        c = await pod.client()
        await c.send("run", {"segments": [{"kind": "text", "text": "hi"}]})
        events = await collect_until(c, "run_end")
        assert names(events) == [
            "status",
            "turn_start",
            "user_message",
            "text_delta",
            "usage",
            "text_done",
            "turn_end",
            "status",
            "run_end",
        ]
        assert "".join(e.data["text"] for e in events if e.event == "text_delta") == "Hello there."
        assert events[-1].data == {"result": "finished"}
        assert events[-2].data["status"] == "idle"
        assert pod.provider.requests[0].messages == [
            {"role": "user", "content": [{"type": "text", "text": "hi"}]}
        ]
        await c.close()


async def test_pause_mid_stream_then_resume(workspace: Path, short_dir: Path) -> None:
    done = ScriptedReply(text="finished after resume")
    async with running_pod(workspace, short_dir, replies=[SLOW_TEXT, done]) as pod:
        c = await pod.client()
        await c.send("run", {"input": "tell me something long"})
        await c.wait_for("text_delta")
        await c.send("pause")
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "paused"}
        status = await c.request("get_status")
        assert status.data["status"] == "paused"
        # Nothing of the partial stream was committed.
        history = (await c.request("get_history")).data["items"]
        assert [i["kind"] for i in history] == ["user_message"]
        # No turn_end on pause: the turn is still open.
        assert "turn_end" not in names(events)

        await c.send("resume")
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "finished"}
        assert [e.data for e in events if e.event == "turn_start"] == [{"turn": 1, "resumed": True}]
        # The resumed request is exactly the request that was interrupted.
        first, second = pod.provider.requests
        assert first.messages == second.messages
        history = (await c.request("get_history")).data["items"]
        assert [i["kind"] for i in history] == ["user_message", "assistant"]
        pod.assert_all_requests_valid()
        await c.close()


class PauseBeforeTools(BaseInterceptor):
    """Pauses before the first tool call, leaving the call unanswered (an orphan)."""

    def __init__(self) -> None:
        self.armed = True

    def before_tool(self, call: ToolUseBlock) -> ToolAction:
        if self.armed:
            self.armed = False
            return Pause("review first")
        return Continue()


async def test_paused_with_orphan_then_run_closes_it(workspace: Path, short_dir: Path) -> None:
    calls = ScriptedReply(
        text="Reading.",
        tool_calls=[
            ScriptedToolCall(name="read_file", input={"path": "README.md"}, id="toolu_a"),
            ScriptedToolCall(name="read_file", input={"path": "src/app.py"}, id="toolu_b"),
        ],
    )
    chain = InterceptorChain(interceptors=[PauseBeforeTools()])
    replies = [calls, ScriptedReply(text="new topic")]
    async with running_pod(workspace, short_dir, replies=replies, interceptors=chain) as pod:
        c = await pod.client()
        await c.send("run", {"input": "read two files"})
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "paused"}
        await c.send("run", {"input": "never mind, something else"})
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "finished"}
        request = pod.provider.requests[-1]
        assert request.messages[-1] == {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_a",
                    "content": "[Interrupted by user]",
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_b",
                    "content": "[Interrupted by user]",
                },
                {"type": "text", "text": INTERRUPT_NOTE},
                {"type": "text", "text": "never mind, something else"},
            ],
        }
        # The paused turn is closed for good before the new one starts.
        assert [e.data for e in events if e.event == "turn_end"] == [
            {"turn": 1, "result": "cancelled"},
            {"turn": 2, "result": "finished"},
        ]
        synthetic = [e.data for e in events if e.event == "tool_result"]
        assert [s["synthetic"] for s in synthetic] == [True, True]
        assert [s["content"] for s in synthetic] == [None, None]
        pod.assert_all_requests_valid()
        await c.close()


async def test_pause_during_slow_tool_records_truthful_result(
    workspace: Path, short_dir: Path
) -> None:
    sleepy = ScriptedReply(
        tool_calls=[
            ScriptedToolCall(
                name="bash", input={"command": "echo started; sleep 30"}, id="toolu_sleep"
            )
        ]
    )
    replies = [sleepy, ScriptedReply(text="after resume")]
    async with running_pod(workspace, short_dir, replies=replies, allow_bash=True) as pod:
        c = await pod.client()
        await c.send("run", {"input": "sleep please"})
        await c.wait_for("status", state="executing_tools")
        await asyncio.sleep(0.3)  # let the shell print "started" (content detail only)
        await c.send("pause")
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "paused"}
        result = next(e.data for e in events if e.event == "tool_result")
        assert result["summary"] == "[Interrupted by user]"
        assert result["is_error"] is True
        assert result["synthetic"] is False
        assert "stopped by the user after" in (result["content"] or "")
        # Resume does not run the command again: it continues with the next request.
        await c.send("resume")
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "finished"}
        assert "tool_call_start" not in names(events)
        assert len(pod.provider.requests) == 2
        pod.assert_all_requests_valid()
        await c.close()


async def test_cancel_mid_tool_goes_idle_and_next_run_is_valid(
    workspace: Path, short_dir: Path
) -> None:
    sleepy = ScriptedReply(
        tool_calls=[ScriptedToolCall(name="bash", input={"command": "sleep 30"}, id="toolu_s")]
    )
    replies = [sleepy, ScriptedReply(text="fresh start")]
    async with running_pod(workspace, short_dir, replies=replies, allow_bash=True) as pod:
        c = await pod.client()
        await c.send("run", {"input": "sleep"})
        await c.wait_for("status", state="executing_tools")
        await c.send("cancel")
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "cancelled"}
        assert [e.data["result"] for e in events if e.event == "turn_end"] == ["cancelled"]
        assert (await c.request("get_status")).data["status"] == "idle"
        await c.send("run", {"input": "again"})
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "finished"}
        pod.assert_all_requests_valid()
        await c.close()


async def test_rejections_come_from_the_machine(workspace: Path, short_dir: Path) -> None:
    async with running_pod(workspace, short_dir, replies=[SLOW_TEXT]) as pod:
        c = await pod.client()
        for method, code in [
            ("pause", "not_running"),
            ("cancel", "not_running"),
            ("resume", "not_paused"),
        ]:
            await c.send(method, id=method)
            err = await c.wait_for("error", id=method)
            assert err.data["code"] == code
        await c.send("run", {"input": "go"})
        await c.wait_for("text_delta")
        await c.send("run", {"input": "again"}, id="r2")
        err = await c.wait_for("error", id="r2")
        assert err.data["code"] == "already_running"
        await c.send("pause")
        await collect_until(c, "run_end")
        await c.send("pause", id="p2")  # pause while paused: a no-op, no error
        await c.send("cancel", id="c2")
        err = await c.wait_for("error", id="c2")
        assert err.data["code"] == "not_running"
        assert (await c.request("get_status")).data["status"] == "paused"
        await c.close()


async def test_notify_when_idle_starts_a_turn(workspace: Path, short_dir: Path) -> None:
    async with running_pod(workspace, short_dir, replies=[ScriptedReply(text="noted")]) as pod:
        c = await pod.client()
        await c.send("notify", {"message": "build finished"})
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "finished"}
        assert pod.provider.requests[0].messages == [
            {"role": "user", "content": [{"type": "text", "text": "[Notification] build finished"}]}
        ]
        await c.close()


async def test_notify_while_running_lands_at_the_round_boundary(
    workspace: Path, short_dir: Path
) -> None:
    slow_tool = ScriptedReply(
        tool_calls=[ScriptedToolCall(name="bash", input={"command": "sleep 0.5"}, id="toolu_1")]
    )
    replies = [slow_tool, ScriptedReply(text="ok")]
    async with running_pod(workspace, short_dir, replies=replies, allow_bash=True) as pod:
        c = await pod.client()
        await c.send("run", {"input": "work"})
        await c.wait_for("status", state="executing_tools")
        await c.send("notify", {"message": "tests are green"})
        await collect_until(c, "run_end")
        second = pod.provider.requests[1].messages[-1]["content"]
        assert [b["type"] for b in second] == ["tool_result", "text"]
        assert second[1]["text"] == "[Notification] tests are green"
        pod.assert_all_requests_valid()
        await c.close()


async def test_pod_event_from_child_becomes_a_note(workspace: Path, short_dir: Path) -> None:
    async with running_pod(workspace, short_dir, replies=[ScriptedReply(text="ok")]) as pod:
        c = await pod.client()
        await c.send("pod_event", {"kind": "turn_ended", "pod": "child-1", "message": "done"})
        await collect_until(c, "run_end")
        text = pod.provider.requests[0].messages[0]["content"][0]["text"]
        assert text == "[Pod event] child pod 'child-1' turn_ended: done"
        await c.close()


async def test_two_clients_see_the_same_events(workspace: Path, short_dir: Path) -> None:
    async with running_pod(workspace, short_dir, replies=[ScriptedReply(text="shared")]) as pod:
        a, b = await pod.client(), await pod.client()
        await a.send("run", {"input": "hi"})
        ea = await collect_until(a, "run_end")
        eb = await collect_until(b, "run_end")
        assert [(e.event, e.data) for e in ea] == [(e.event, e.data) for e in eb]
        await a.close()
        await b.close()


async def test_malformed_line_does_not_disturb_other_clients(
    workspace: Path, short_dir: Path
) -> None:
    async with running_pod(workspace, short_dir, replies=[ScriptedReply(text="still here")]) as pod:
        bad, good = await pod.client(), await pod.client()
        await bad.send_raw(b"{not json\n")
        err = await bad.wait_for("error")
        assert err.data["code"] == "invalid_request"
        await bad.send_raw(b'{"method": "explode"}\n')
        err = await bad.wait_for("error")
        assert "unknown method" in err.data["message"]
        await good.send("run", {"input": "hello"})
        events = await collect_until(good, "run_end")
        assert events[-1].data == {"result": "finished"}
        assert all(e.event != "error" for e in events)
        await bad.close()
        await good.close()


async def test_shutdown_while_running_leaves_a_valid_session(
    workspace: Path, short_dir: Path
) -> None:
    sleepy = ScriptedReply(
        tool_calls=[ScriptedToolCall(name="bash", input={"command": "sleep 30"}, id="toolu_z")]
    )
    async with running_pod(workspace, short_dir, replies=[sleepy], allow_bash=True) as pod:
        c = await pod.client()
        await c.send("run", {"input": "sleep"})
        await c.wait_for("status", state="executing_tools")
        await c.send("shutdown")
        events = await collect_until(c, "shutdown")
        assert [e.data["status"] for e in events if e.event == "status"][-1] == "stopped"
        served = await asyncio.wait_for(pod.task, 10)
        await c.close()
    session = load_session(served.session_path)
    kinds = [item.kind for item in session.items]
    assert kinds == ["user_message", "assistant", "tool_result"]
    assert not session.cut_off
    assert not pod.socket.exists()


async def test_session_file_is_private_and_reloads(workspace: Path, short_dir: Path) -> None:
    async with running_pod(workspace, short_dir, replies=[ScriptedReply(text="a")]) as pod:
        c = await pod.client()
        await c.send("run", {"input": "one"})
        await collect_until(c, "run_end")
        history = (await c.request("get_history")).data["items"]
        assert (pod.socket.stat().st_mode & 0o777) == 0o600
        await c.send("shutdown")
        await c.close()
        served = await asyncio.wait_for(pod.task, 10)
    assert (served.session_path.stat().st_mode & 0o777) == 0o600
    assert (served.session_path.parent.stat().st_mode & 0o777) == 0o700
    reloaded = load_session(served.session_path)
    assert history == [json.loads(json.dumps(item_to_json(it))) for it in reloaded.items]


async def test_notes_queued_while_paused_survive_a_shutdown(
    workspace: Path, short_dir: Path
) -> None:
    async with running_pod(workspace, short_dir, replies=[SLOW_TEXT]) as pod:
        c = await pod.client()
        await c.send("run", {"input": "long"})
        await c.wait_for("text_delta")
        await c.send("pause")
        await collect_until(c, "run_end")
        await c.send("notify", {"message": "deploy done"})
        await c.send("shutdown")
        await collect_until(c, "shutdown")
        served = await asyncio.wait_for(pod.task, 10)
        await c.close()
    items = load_session(served.session_path).items
    assert [(i.kind, getattr(i, "text", "")) for i in items] == [
        ("user_message", "long"),
        ("system_message", "[Notification] deploy done"),
    ]


async def test_bash_output_streams_live_before_its_result(workspace: Path, short_dir: Path) -> None:
    call = ScriptedToolCall(name="bash", input={"command": "echo one; sleep 0.2; echo two"})
    replies = [ScriptedReply(tool_calls=[call]), ScriptedReply(text="done")]
    async with running_pod(workspace, short_dir, replies=replies, allow_bash=True) as pod:
        c = await pod.client()
        await c.send("run", {"input": "run it"})
        events = await collect_until(c, "tool_result")
        deltas = [e.data for e in events if e.event == "tool_output_delta"]
        assert "".join(d["text"] for d in deltas) == "one\ntwo\n"
        assert len(deltas) >= 2  # the first line arrived while the command still ran
        assert {d["id"] for d in deltas} == {events[-1].data["id"]}
        await collect_until(c, "run_end")
        await c.close()


async def test_a_turn_stops_with_limit_reached_once_its_token_budget_is_spent(
    tmp_path: Path,
) -> None:
    from tests.e2e.harness import ScriptedReply, ScriptedToolCall, collect_until, running_pod

    workspace = tmp_path / "ws"
    workspace.mkdir()
    replies = [
        ScriptedReply(text="Looking.", tool_calls=[ScriptedToolCall(name="glob", input={})]),
        ScriptedReply(text="never asked for"),
    ]
    async with running_pod(workspace, tmp_path, replies=replies, max_turn_tokens=1) as pod:
        client = await pod.client()
        await client.send("run", {"input": "go"})
        events = await collect_until(client, "run_end", timeout=20)
        assert events[-1].data["result"] == "limit_reached"
        assert len(pod.provider.requests) == 1  # the budget was spent by the first request
        alerts = [e for e in events if e.event == "alert"]
        assert any("max_turn_tokens" in a.data["message"] for a in alerts)
        await client.close()


async def test_a_pod_stopped_before_anyone_spoke_leaves_no_session(
    workspace: Path, short_dir: Path
) -> None:
    async with running_pod(workspace, short_dir) as silent:
        c = await silent.client()
        assert (await c.status()).status == "idle"
        await c.close()
    assert not silent.task.result().session_path.exists()
    async with running_pod(workspace, short_dir, replies=[ScriptedReply(text="hi")]) as spoken:
        c = await spoken.client()
        await c.send("run", {"input": "hello"})
        await collect_until(c, "run_end")
        await c.close()
    assert spoken.task.result().session_path.exists()
