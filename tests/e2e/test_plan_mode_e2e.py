"""Plan mode over the real socket: writes refused without asking, exit_plan_mode approved or
denied, set_mode in each state, a restart keeping the mode, and the tool list unchanged."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

from orchestrator.adapters.session import load_session
from orchestrator.serving.client import PodClient, PodEvent
from tests.e2e.harness import (
    ScriptedReply,
    ScriptedToolCall,
    collect_until,
    running_pod,
    start_pod_process,
)

WAIT = 30.0
"""A generous ceiling for each awaited event (tests run beside CPU burners)."""

PLAN = "## Plan\n\n1. Change `src/app.py` to return 43.\n2. Run the tests."


def write(path: str, content: str, call_id: str) -> ScriptedToolCall:
    return ScriptedToolCall(name="write_file", input={"path": path, "content": content}, id=call_id)


def exit_plan(call_id: str, plan: str = PLAN) -> ScriptedToolCall:
    return ScriptedToolCall(name="exit_plan_mode", input={"plan": plan}, id=call_id)


def results(events: list[PodEvent]) -> dict[str, dict[str, Any]]:
    return {e.data["id"]: e.data for e in events if e.event == "tool_result"}


def user_texts(message: dict[str, Any]) -> list[str]:
    content = message["content"]
    if isinstance(content, str):
        return [content]
    return [b.get("text", "") for b in content if b.get("type") == "text"]


async def set_mode(c: PodClient, mode: str) -> PodEvent:
    return await c.request("set_mode", {"mode": mode}, timeout=WAIT)


async def test_a_write_in_plan_mode_is_refused_without_asking(
    workspace: Path, short_dir: Path
) -> None:
    round_ = [
        write("new.txt", "x", "toolu_w"),
        ScriptedToolCall(name="bash", input={"command": "touch ran"}, id="toolu_b"),
        ScriptedToolCall(name="read_file", input={"path": "README.md"}, id="toolu_r"),
    ]
    replies = [ScriptedReply(tool_calls=round_), ScriptedReply(text="planned")]
    async with running_pod(
        workspace,
        short_dir,
        replies=replies,
        allow_bash=True,
        permissions={"mode": "plan", "allow": ["bash", "write_file"]},
    ) as pod:
        c = await pod.client()
        status = (await c.request("get_status")).data
        assert status["permission_mode"] == "plan"
        await c.send("run", {"input": "plan the change"})
        events = await collect_until(c, "run_end", timeout=WAIT)
        assert events[-1].data == {"result": "finished"}
        assert "approval_request" not in [e.event for e in events]  # nothing asks
        got = results(events)
        for call in ("toolu_w", "toolu_b"):
            assert got[call]["is_error"] and "plan mode" in got[call]["summary"]
            assert "exit_plan_mode" in got[call]["summary"]
        assert not got["toolu_r"]["is_error"]
        assert not (workspace / "new.txt").exists() and not (workspace / "ran").exists()
        # The model was told it is planning, in a note before the prompt.
        first = pod.provider.requests[0].messages
        assert any("[Permission mode: plan]" in t for m in first for t in user_texts(m))
        pod.assert_all_requests_valid()


async def test_an_approved_plan_switches_the_mode_and_the_turn_goes_on(
    workspace: Path, short_dir: Path
) -> None:
    replies = [
        ScriptedReply(tool_calls=[exit_plan("toolu_plan")]),
        ScriptedReply(tool_calls=[write("done.txt", "ok", "toolu_w")]),
        ScriptedReply(text="implemented"),
    ]
    async with running_pod(
        workspace, short_dir, replies=replies, permissions={"mode": "accept-edits"}
    ) as pod:
        c = await pod.client()
        assert (await set_mode(c, "plan")).data["permission_mode"] == "plan"
        await c.send("run", {"input": "make a plan, then do it"})
        asked = await c.wait_for("approval_request", timeout=WAIT)
        assert asked.data["kind"] == "plan" and asked.data["tool"] == "exit_plan_mode"
        assert asked.data["arguments"]["plan"] == PLAN
        plan_pod = await c.request("approve", {"id": "toolu_plan", "mode": "plan"})
        assert plan_pod.event == "error" and plan_pod.data["code"] == "invalid_request"
        await c.send("approve", {"id": "toolu_plan", "mode": "accept-edits", "scope": "session"})
        events = await collect_until(c, "run_end", timeout=WAIT)
        assert events[-1].data == {"result": "finished"}
        got = results(events)
        assert "accept-edits mode" in got["toolu_plan"]["summary"]
        assert not got["toolu_w"]["is_error"]  # accept-edits: the write ran unasked
        assert (workspace / "done.txt").read_text() == "ok"
        modes = [e.data["permission_mode"] for e in events if e.event == "status"]
        assert "accept-edits" in modes
        status = (await c.request("get_status")).data
        assert status["permission_mode"] == "accept-edits"
        # The tools sent are the same list in every request, in plan mode and out of it.
        tool_lists = [json.dumps(r.tools, sort_keys=True) for r in pod.provider.requests]
        assert len(set(tool_lists)) == 1
        assert "exit_plan_mode" in tool_lists[0]
        pod.assert_all_requests_valid()
    session = load_session(Path(status["session"]))
    assert session.mode is not None and session.mode.mode == "accept-edits"
    assert not session.grants  # scope "session" means nothing for a plan


async def test_a_denied_plan_keeps_planning_with_the_reason(
    workspace: Path, short_dir: Path
) -> None:
    replies = [
        ScriptedReply(tool_calls=[exit_plan("toolu_p1")]),
        ScriptedReply(tool_calls=[write("x.txt", "x", "toolu_w")]),
        ScriptedReply(text="revising"),
    ]
    async with running_pod(
        workspace, short_dir, replies=replies, permissions={"mode": "plan"}
    ) as pod:
        c = await pod.client()
        await c.send("run", {"input": "plan it"})
        await c.wait_for("approval_request", timeout=WAIT)
        await c.send("deny", {"id": "toolu_p1", "message": "also cover the CLI"})
        events = await collect_until(c, "run_end", timeout=WAIT)
        got = results(events)
        assert "also cover the CLI" in got["toolu_p1"]["summary"]
        assert "stays in plan mode" in got["toolu_p1"]["summary"]
        assert got["toolu_w"]["is_error"] and "plan mode" in got["toolu_w"]["summary"]
        assert not (workspace / "x.txt").exists()
        assert (await c.request("get_status")).data["permission_mode"] == "plan"


async def test_set_mode_in_idle_running_awaiting_approval_and_paused(
    workspace: Path, short_dir: Path
) -> None:
    replies = [
        ScriptedReply(tool_calls=[write("a.txt", "1", "toolu_a")]),
        ScriptedReply(tool_calls=[write("b.txt", "2", "toolu_b")]),
        ScriptedReply(text="done"),
    ]
    async with running_pod(
        workspace, short_dir, replies=replies, permissions={"mode": "accept-edits"}
    ) as pod:
        c = await pod.client()
        # idle: an unknown mode, and one wider than the configuration, are refused.
        unknown = await c.request("set_mode", {"mode": "planning"})
        assert unknown.event == "error" and unknown.data["code"] == "invalid_request"
        wider = await c.request("set_mode", {"mode": "yolo"})
        assert wider.event == "error" and "wider" in wider.data["message"]
        assert (await set_mode(c, "default")).data["permission_mode"] == "default"
        await c.send("run", {"input": "write two files"})
        # awaiting approval (default asks): switch to plan while the call waits.
        asked = await c.wait_for("approval_request", timeout=WAIT)
        assert (await set_mode(c, "plan")).data["state"] == "awaiting_approval"
        await c.send("approve", {"id": asked.data["id"]})
        # The next round's write is decided in plan mode: refused, nothing asks.
        events = await collect_until(c, "run_end", timeout=WAIT)
        got = results(events)
        assert not got["toolu_a"]["is_error"]
        assert got["toolu_b"]["is_error"] and "plan mode" in got["toolu_b"]["summary"]
        # paused: a paused pod takes it too.
        pod.provider.replies.extend(
            [ScriptedReply(tool_calls=[write("c.txt", "3", "toolu_c")]), ScriptedReply(text="ok")]
        )
        await set_mode(c, "default")
        await c.send("run", {"input": "once more"})
        await c.wait_for("approval_request", timeout=WAIT)
        await c.send("pause")
        await c.wait_for("run_end", timeout=WAIT)
        paused = await set_mode(c, "accept-edits")
        assert (paused.data["status"], paused.data["permission_mode"]) == ("paused", "accept-edits")
        await c.send("resume")
        events = await collect_until(c, "run_end", timeout=WAIT)
        assert "approval_request" not in [e.event for e in events]  # accept-edits: unasked
        assert (workspace / "c.txt").read_text() == "3"
        # The model heard of each mode it worked in, in notes between rounds.
        told = [
            t
            for m in pod.provider.requests[-1].messages
            for t in user_texts(m)
            if "[Permission mode:" in t
        ]
        assert any("plan" in t for t in told) and "accept-edits" in told[-1]
        pod.assert_all_requests_valid()


async def test_a_restart_keeps_the_mode(workspace: Path, short_dir: Path) -> None:
    session = short_dir / "s.jsonl"
    async with running_pod(
        workspace,
        short_dir,
        replies=[ScriptedReply(text="hi")],
        permissions={"mode": "default"},
        session=session,
    ) as pod:
        c = await pod.client()
        await c.send("run", {"input": "hello"})
        await collect_until(c, "run_end", timeout=WAIT)
        await set_mode(c, "plan")
    async with running_pod(
        workspace,
        short_dir,
        replies=[ScriptedReply(tool_calls=[write("n.txt", "x", "toolu_n")]), ScriptedReply()],
        permissions={"mode": "default"},
        session=session,
        continue_=True,
    ) as pod:
        c = await pod.client()
        assert (await c.request("get_status")).data["permission_mode"] == "plan"
        await c.send("run", {"input": "write it"})
        events = await collect_until(c, "run_end", timeout=WAIT)
        assert results(events)["toolu_n"]["is_error"]
        assert not (workspace / "n.txt").exists()
    # Started with another mode since: the user's new choice counts, not the record.
    async with running_pod(
        workspace,
        short_dir,
        permissions={"mode": "accept-edits"},
        session=session,
        continue_=True,
    ) as pod:
        c = await pod.client()
        assert (await c.request("get_status")).data["permission_mode"] == "accept-edits"


async def test_what_a_model_or_a_client_cannot_do_with_plan_mode(
    workspace: Path, short_dir: Path
) -> None:
    replies = [
        # A blank plan is not put to anyone; outside plan mode the call is refused at once.
        ScriptedReply(tool_calls=[exit_plan("toolu_blank", plan="  \n ")]),
        ScriptedReply(text="ok"),
        ScriptedReply(tool_calls=[exit_plan("toolu_outside")]),
        ScriptedReply(text="ok"),
        ScriptedReply(tool_calls=[write("w.txt", "x", "toolu_w")]),
        ScriptedReply(text="ok"),
    ]
    async with running_pod(
        workspace, short_dir, replies=replies, permissions={"mode": "default"}
    ) as pod:
        c = await pod.client()
        await set_mode(c, "plan")
        await c.send("run", {"input": "plan"})
        events = await collect_until(c, "run_end", timeout=WAIT)
        assert "approval_request" not in [e.event for e in events]
        assert "not asked" in results(events)["toolu_blank"]["summary"]
        await set_mode(c, "default")
        await c.send("run", {"input": "leave plan mode yourself"})
        events = await collect_until(c, "run_end", timeout=WAIT)
        assert "approval_request" not in [e.event for e in events]
        assert "not in plan mode" in results(events)["toolu_outside"]["summary"]
        # A mode on the approval of a call that is no plan is refused; the call still waits.
        await c.send("run", {"input": "write"})
        await c.wait_for("approval_request", timeout=WAIT)
        refused = await c.request("approve", {"id": "toolu_w", "mode": "default"})
        assert refused.event == "error" and "no plan" in refused.data["message"]
        assert (await c.request("get_status")).data["state"] == "awaiting_approval"
        await c.send("approve", {"id": "toolu_w"})
        await collect_until(c, "run_end", timeout=WAIT)
        assert (workspace / "w.txt").read_text() == "x"
        pod.assert_all_requests_valid()


async def test_kill_9_waiting_for_a_plan_comes_back_in_plan_mode_and_asks_again(
    workspace: Path, short_dir: Path
) -> None:
    script = short_dir / "script.json"
    call = {"name": "exit_plan_mode", "input": {"plan": PLAN}, "id": "toolu_k"}
    script.write_text(json.dumps({"replies": [{"tool_calls": [call]}, {"text": "ok"}]}))
    socket, session = short_dir / "p.sock", short_dir / "s.jsonl"
    proc = start_pod_process(workspace, socket, session, script)
    try:
        c = await PodClient.connect(socket)
        await set_mode(c, "plan")
        await c.send("run", {"input": "plan it"})
        await c.wait_for("approval_request", timeout=WAIT)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        await c.close()
    finally:
        if proc.poll() is None:
            proc.kill()
    script.write_text(json.dumps({"replies": [{"text": "ok"}]}))
    proc = start_pod_process(workspace, socket, session, script, "--continue")
    try:
        c = await PodClient.connect(socket)
        status = (await c.request("get_status")).data
        assert (status["status"], status["permission_mode"]) == ("paused", "plan")
        await c.send("resume")
        asked = await c.wait_for("approval_request", timeout=WAIT)
        assert asked.data["kind"] == "plan" and asked.data["id"] == "toolu_k"
        await c.send("approve", {"id": "toolu_k"})
        events = await collect_until(c, "run_end", timeout=WAIT)
        assert events[-1].data == {"result": "finished"}
        # Started with accept-edits (the harness's unattended pod): back to it.
        assert (await c.request("get_status")).data["permission_mode"] == "accept-edits"
        await c.send("shutdown")
        await c.close()
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
