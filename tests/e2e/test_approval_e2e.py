"""Tool approval over the real socket: ask, approve once or always, deny with a message;
pause, cancel, shutdown and kill -9 while a call waits."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

from orchestrator.adapters.session import load_session
from orchestrator.serving.client import PodClient
from tests.e2e.harness import (
    ScriptedReply,
    ScriptedToolCall,
    collect_until,
    running_pod,
    start_pod_process,
)

DEFAULT = {"mode": "default"}


def edit(path: str, old: str, new: str, call_id: str) -> ScriptedToolCall:
    return ScriptedToolCall(
        name="edit_file",
        input={"path": path, "old_string": old, "new_string": new},
        id=call_id,
    )


def bash(command: str, call_id: str) -> ScriptedToolCall:
    return ScriptedToolCall(name="bash", input={"command": command}, id=call_id)


def results(events: list[Any]) -> dict[str, dict[str, Any]]:
    return {e.data["id"]: e.data for e in events if e.event == "tool_result"}


async def test_edits_ask_reads_run_and_answers_are_kept(workspace: Path, short_dir: Path) -> None:
    round_ = [
        edit("src/app.py", "42", "43", "toolu_edit"),
        ScriptedToolCall(name="read_file", input={"path": "README.md"}, id="toolu_read"),
        ScriptedToolCall(
            name="write_file", input={"path": "new.txt", "content": "x"}, id="toolu_write"
        ),
    ]
    replies = [ScriptedReply(tool_calls=round_), ScriptedReply(text="done")]
    async with running_pod(workspace, short_dir, replies=replies, permissions=DEFAULT) as pod:
        c = await pod.client()
        await c.send("run", {"input": "change it"})
        first = await c.wait_for("approval_request")
        second = await c.wait_for("approval_request")
        asked = {first.data["id"]: first.data, second.data["id"]: second.data}
        assert set(asked) == {"toolu_edit", "toolu_write"}
        edit_request = asked["toolu_edit"]
        assert edit_request["kind"] == "edit" and edit_request["summary"] == "edit_file src/app.py"
        assert edit_request["diff"].splitlines()[-2:] == ["-    return 42", "+    return 43"]
        assert edit_request["reason"] == "default mode asks before edit tools"
        status = (await c.request("get_status")).data
        assert status["state"] == "awaiting_approval"
        assert sorted(a["id"] for a in status["approvals"]) == ["toolu_edit", "toolu_write"]
        # The read needed no approval: it ran while the others waited.
        assert not (workspace / "new.txt").exists()
        await c.send("approve", {"id": "toolu_edit"})
        await c.send("deny", {"id": "toolu_write", "message": "no new files, please"})
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "finished"}
        got = results(events)
        assert got["toolu_write"]["summary"] == "denied by user: no new files, please"
        assert got["toolu_write"]["is_error"]
        assert not got["toolu_edit"]["is_error"]
        assert "return 43" in (workspace / "src" / "app.py").read_text()
        assert not (workspace / "new.txt").exists()
        resolved = [e.data for e in events if e.event == "approval_resolved"]
        assert {r["id"]: r["decision"] for r in resolved} == {
            "toolu_edit": "approved",
            "toolu_write": "denied",
        }
        history = (await c.request("get_history")).data["items"]
        read = [i for i in history if i.get("call_id") == "toolu_read"]
        assert read and not read[0]["is_error"]
        pod.assert_all_requests_valid()
        await c.close()


async def test_always_allows_the_same_command_for_the_pods_life(
    workspace: Path, short_dir: Path
) -> None:
    replies = [
        ScriptedReply(tool_calls=[bash("echo hello", "toolu_1")]),
        ScriptedReply(tool_calls=[bash("echo hello", "toolu_2"), bash("echo other", "toolu_3")]),
        ScriptedReply(text="done"),
    ]
    async with running_pod(workspace, short_dir, replies=replies, permissions=DEFAULT) as pod:
        c = await pod.client()
        await c.send("run", {"input": "say hello twice"})
        request = await c.wait_for("approval_request")
        assert request.data["summary"] == "run: echo hello"
        await c.send("approve", {"id": request.data["id"], "scope": "session"})
        # The same command runs unasked; a different one still asks.
        other = await c.wait_for("approval_request")
        assert other.data["id"] == "toolu_3"
        await c.send("approve", {"id": "toolu_3"})
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "finished"}
        got = await c.request("get_history")
        outputs = {
            i["call_id"]: i["content"] for i in got.data["items"] if i["kind"] == "tool_result"
        }
        assert outputs["toolu_2"] == "hello\n" and outputs["toolu_3"] == "other\n"
        await c.close()


async def test_rules_allow_simple_commands_and_deny_outright(
    workspace: Path, short_dir: Path
) -> None:
    permissions = {
        "mode": "default",
        "allow": ["bash(echo *)"],
        "deny": ["bash(rm *)", "write_file"],
    }
    round_ = [
        bash("echo fine", "toolu_ok"),
        bash("rm -rf src", "toolu_rm"),
        ScriptedToolCall(name="write_file", input={"path": "a.txt", "content": "x"}, id="toolu_w"),
    ]
    chained = bash("echo fine; touch sneaky", "toolu_chain")
    replies = [
        ScriptedReply(tool_calls=round_),
        ScriptedReply(tool_calls=[chained]),
        ScriptedReply(text="done"),
    ]
    async with running_pod(workspace, short_dir, replies=replies, permissions=permissions) as pod:
        c = await pod.client()
        await c.send("run", {"input": "go"})
        # A chained command never matches an allow pattern: it asks.
        request = await c.wait_for("approval_request")
        assert request.data["id"] == "toolu_chain"
        await c.send("deny", {"id": "toolu_chain"})
        events = await collect_until(c, "run_end")
        history = (await c.request("get_history")).data["items"]
        got = {i["call_id"]: i for i in history if i["kind"] == "tool_result"}
        assert got["toolu_ok"]["content"] == "fine\n"
        assert got["toolu_rm"]["summary"] == "bash: not run — denied by the rule bash(rm *)"
        assert got["toolu_chain"]["summary"] == "denied by user: no reason given"
        assert (workspace / "src").is_dir() and not (workspace / "sneaky").exists()
        assert "write_file" not in {t["name"] for t in pod.provider.requests[0].tools}
        assert events[-1].data == {"result": "finished"}
        await c.close()


async def test_answers_are_refused_when_nothing_waits(workspace: Path, short_dir: Path) -> None:
    replies = [ScriptedReply(tool_calls=[bash("echo 1", "toolu_a")]), ScriptedReply(text="ok")]
    async with running_pod(workspace, short_dir, replies=replies, permissions=DEFAULT) as pod:
        c = await pod.client()
        error = await c.request("approve", {"id": "toolu_a"})
        assert error.data["code"] == "not_awaiting_approval"
        await c.send("run", {"input": "go"})
        await c.wait_for("approval_request")
        wrong = await c.request("deny", {"id": "toolu_nope"})
        assert wrong.data["code"] == "invalid_request"
        assert "no approval is waiting for tool call 'toolu_nope'" in wrong.data["message"]
        await c.send("approve", {"id": "toolu_a"})
        await c.wait_for("run_end", result="finished")
        _ = pod
        await c.close()


async def test_pause_withdraws_and_resume_asks_again(workspace: Path, short_dir: Path) -> None:
    replies = [ScriptedReply(tool_calls=[bash("echo once", "toolu_a")]), ScriptedReply(text="ok")]
    async with running_pod(workspace, short_dir, replies=replies, permissions=DEFAULT) as pod:
        c = await pod.client()
        await c.send("run", {"input": "go"})
        await c.wait_for("approval_request")
        await c.send("pause")
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "paused"}
        assert [e.data for e in events if e.event == "approval_resolved"] == [
            {"id": "toolu_a", "decision": "withdrawn"}
        ]
        history = (await c.request("get_history")).data["items"]
        assert not [i for i in history if i["kind"] == "tool_result"]  # it never started
        await c.send("resume")
        again = await c.wait_for("approval_request")
        assert again.data["id"] == "toolu_a"
        await c.send("approve", {"id": "toolu_a"})
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "finished"}
        assert results(events)["toolu_a"]["content"] == "once\n"
        pod.assert_all_requests_valid()
        await c.close()


async def test_cancel_and_shutdown_while_waiting_leave_a_valid_session(
    workspace: Path, short_dir: Path, tmp_path: Path
) -> None:
    session = tmp_path / "s.jsonl"
    replies = [
        ScriptedReply(tool_calls=[bash("echo 1", "toolu_a")]),
        ScriptedReply(text="ok"),
        ScriptedReply(tool_calls=[bash("echo 2", "toolu_b")]),
    ]
    async with running_pod(
        workspace, short_dir, replies=replies, permissions=DEFAULT, session=session
    ) as pod:
        c = await pod.client()
        await c.send("run", {"input": "first"})
        await c.wait_for("approval_request")
        await c.send("cancel")
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "cancelled"}
        closed = results(events)["toolu_a"]
        assert closed["synthetic"] and closed["summary"] == "[Interrupted by user]"
        await c.send("run", {"input": "second"})
        await collect_until(c, "run_end")  # the request after a cancel is valid: it finished
        await c.send("run", {"input": "third"})
        await c.wait_for("approval_request")
        await c.send("shutdown")
        await c.wait_for("shutdown")
        pod.assert_all_requests_valid()
        await c.close()
    loaded = load_session(session)
    assert not loaded.cut_off and not loaded.warnings


async def test_kill_9_while_waiting_then_resume_asks_again(
    workspace: Path, short_dir: Path
) -> None:
    script = short_dir / "script.json"
    call = {"name": "bash", "input": {"command": "echo ran >> ran.txt"}, "id": "toolu_k"}
    script.write_text(json.dumps({"replies": [{"tool_calls": [call]}, {"text": "ok"}]}))
    socket, session = short_dir / "p.sock", short_dir / "s.jsonl"
    proc = start_pod_process(workspace, socket, session, script, unattended=False)
    try:
        c = await PodClient.connect(socket)
        await c.send("run", {"input": "go"})
        await c.wait_for("approval_request")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        await c.close()
    finally:
        if proc.poll() is None:
            proc.kill()
    script.write_text(json.dumps({"replies": [{"text": "ok"}]}))
    proc = start_pod_process(workspace, socket, session, script, "--continue", unattended=False)
    try:
        c = await PodClient.connect(socket)
        assert (await c.request("get_status")).data["status"] == "paused"
        await c.send("resume")
        request = await c.wait_for("approval_request")
        assert request.data["id"] == "toolu_k"
        await c.send("approve", {"id": "toolu_k"})
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "finished"}
        await c.send("shutdown")
        await c.close()
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert (workspace / "ran.txt").read_text() == "ran\n"  # once: it had never started


async def test_only_the_answer_that_settled_a_request_counts(
    workspace: Path, short_dir: Path
) -> None:
    replies = [
        ScriptedReply(tool_calls=[bash("echo one", "toolu_first")]),
        ScriptedReply(tool_calls=[bash("echo one", "toolu_again")]),
        ScriptedReply(text="done"),
    ]
    async with running_pod(workspace, short_dir, replies=replies, permissions=DEFAULT) as pod:
        c = await pod.client()
        await c.send("run", {"input": "run it twice"})
        await c.wait_for("approval_request", id="toolu_first")
        # Two answers to one request in one write: "once" settles it; "session" comes too late
        # and must not grant calls like it from now on.
        lines = [
            {"method": "approve", "params": {"id": "toolu_first"}, "id": "a"},
            {"method": "approve", "params": {"id": "toolu_first", "scope": "session"}, "id": "b"},
        ]
        await c.send_raw(b"".join(json.dumps(line).encode() + b"\n" for line in lines))
        refused = await c.wait_for("error", id="b")
        assert refused.data["code"] == "invalid_request"
        assert "toolu_first" in refused.data["message"]
        # The same command asks again: no session rule was granted.
        await c.wait_for("approval_request", id="toolu_again", timeout=10)
        await c.send("approve", {"id": "toolu_again"})
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "finished"}
        await c.close()
