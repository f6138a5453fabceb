"""The todo list through the socket: ``todo_write`` changes ``status.todos`` and sends ``todos``;
the list survives a restart, a rewind goes back to the earlier list, a fork copies it."""

from __future__ import annotations

import asyncio
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


def todo_call(*items: tuple[str, str], call_id: str | None = None) -> ScriptedToolCall:
    """A ``todo_write`` call with ``(content, status)`` items (Claude Code's spelling)."""
    todos = [{"content": c, "status": s, "activeForm": f"Doing {c}"} for c, s in items]
    return ScriptedToolCall(name="todo_write", input={"todos": todos}, id=call_id)


def contents(todos: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(t["content"], t["status"]) for t in todos]


PLAN = (("write the test", "in_progress"), ("fix the bug", "pending"))
LATER = (("write the test", "completed"), ("fix the bug", "in_progress"))


async def run(c: PodClient, text: str) -> list[Any]:
    await c.send("run", {"input": text})
    return await collect_until(c, "run_end", timeout=30)


async def test_todo_write_updates_status_and_sends_the_event(
    workspace: Path, short_dir: Path
) -> None:
    replies = [
        ScriptedReply(text="planning", tool_calls=[todo_call(*PLAN)]),
        ScriptedReply(text="planned"),
    ]
    async with running_pod(workspace, short_dir, replies=replies) as pod:
        c = await pod.client()
        before = (await c.request("get_status")).data
        assert before["todos"] == []
        events = await run(c, "plan it")
        [todos] = [e for e in events if e.event == "todos"]
        assert contents(todos.data["todos"]) == list(PLAN)
        assert todos.data["todos"][0]["active_form"] == "Doing write the test"
        # The event comes before the call's result: the record is on disk first.
        kinds = [e.event for e in events]
        assert kinds.index("todos") < kinds.index("tool_result")
        [result] = [e for e in events if e.event == "tool_result"]
        assert not result.data["is_error"]
        status = (await c.request("get_status")).data
        assert contents(status["todos"]) == list(PLAN)
        # The model read back the list it has now.
        last = pod.provider.requests[-1].messages
        answer = json.dumps(last[-1]["content"])
        assert "[>] write the test" in answer and "[ ] fix the bug" in answer
        pod.assert_all_requests_valid()
        await c.close()


async def test_a_bad_list_is_an_error_result_and_changes_nothing(
    workspace: Path, short_dir: Path
) -> None:
    two_working = todo_call(("a", "in_progress"), ("b", "in_progress"))
    replies = [
        ScriptedReply(text="planning", tool_calls=[todo_call(*PLAN)]),
        ScriptedReply(text="again", tool_calls=[two_working]),
        ScriptedReply(text="done"),
    ]
    async with running_pod(workspace, short_dir, replies=replies) as pod:
        c = await pod.client()
        events = await run(c, "plan it")
        results = [e.data for e in events if e.event == "tool_result"]
        assert [r["is_error"] for r in results] == [False, True]
        assert "at most one item may be in_progress" in results[1]["summary"]
        assert len([e for e in events if e.event == "todos"]) == 1
        status = (await c.request("get_status")).data
        assert contents(status["todos"]) == list(PLAN)
        await c.close()


async def test_the_list_survives_a_restart_and_a_rewind_restores_it(
    workspace: Path, short_dir: Path
) -> None:
    replies = [
        ScriptedReply(text="planning", tool_calls=[todo_call(*PLAN)]),
        ScriptedReply(text="planned"),
        ScriptedReply(text="progress", tool_calls=[todo_call(*LATER)]),
        ScriptedReply(text="progressed"),
    ]
    async with running_pod(workspace, short_dir, replies=replies, checkpoints=False) as pod:
        c = await pod.client()
        await run(c, "plan it")
        await run(c, "go on")
        items = (await c.request("get_history")).data["items"]
        session = (await c.request("get_status")).data["session"]
        await c.close()
    second = [i["seq"] for i in items if i["kind"] == "user_message"][1]

    # A restart (a host's unload and reload reads the same file the same way).
    async with running_pod(
        workspace, short_dir, replies=[], continue_=True, checkpoints=False
    ) as pod:
        c = await pod.client()
        status = (await c.request("get_status")).data
        assert status["session"] == session
        assert contents(status["todos"]) == list(LATER)
        # Rewind to before the second prompt: the list it had then.
        await c.send("rewind", {"to": second, "restore": "conversation"})
        events = await collect_until(c, "rewound", timeout=30)
        [todos] = [e for e in events if e.event == "todos"]
        assert contents(todos.data["todos"]) == list(PLAN)
        status = (await c.request("get_status")).data
        assert contents(status["todos"]) == list(PLAN)
        await c.close()

    # And the rewind holds across the next restart: the later record is rewound on load.
    assert contents([e.model_dump() for e in load_session(Path(session)).todos[-1].todos]) == (
        list(PLAN)
    )
    async with running_pod(
        workspace, short_dir, replies=[], continue_=True, checkpoints=False
    ) as pod:
        c = await pod.client()
        status = (await c.request("get_status")).data
        assert contents(status["todos"]) == list(PLAN)
        await c.close()


async def test_a_fork_copies_the_list_at_its_point(workspace: Path, short_dir: Path) -> None:
    replies = [
        ScriptedReply(text="planning", tool_calls=[todo_call(*PLAN)]),
        ScriptedReply(text="planned"),
        ScriptedReply(text="progress", tool_calls=[todo_call(*LATER)]),
        ScriptedReply(text="progressed"),
    ]
    async with running_pod(workspace, short_dir, replies=replies) as pod:
        c = await pod.client()
        await run(c, "plan it")
        await run(c, "go on")
        items = (await c.request("get_history")).data["items"]
        second = [i["seq"] for i in items if i["kind"] == "user_message"][1]
        whole = await c.request("fork", {})
        at_second = await c.request("fork", {"at": second})
        await c.close()
    assert whole.event == "forked" and at_second.event == "forked"
    copied = load_session(Path(whole.data["path"])).todos
    assert [contents([e.model_dump() for e in r.todos]) for r in copied] == [
        list(PLAN),
        list(LATER),
    ]
    earlier = load_session(Path(at_second.data["path"])).todos
    assert contents([e.model_dump() for e in earlier[-1].todos]) == list(PLAN)


async def test_runs_in_read_only_mode_without_asking(workspace: Path, short_dir: Path) -> None:
    replies = [
        ScriptedReply(text="planning", tool_calls=[todo_call(*PLAN)]),
        ScriptedReply(text="planned"),
    ]
    async with running_pod(
        workspace, short_dir, replies=replies, permissions={"mode": "read-only"}
    ) as pod:
        c = await pod.client()
        events = await run(c, "plan it")
        assert "approval_request" not in [e.event for e in events]
        [result] = [e.data for e in events if e.event == "tool_result"]
        assert not result["is_error"]
        assert contents((await c.request("get_status")).data["todos"]) == list(PLAN)
        await c.close()


async def test_kill_9_between_the_record_and_the_result(workspace: Path, short_dir: Path) -> None:
    """The pod dies after ``todo_write``'s record is synced and before its result is committed
    (a ``PostToolUse`` hook holds the result back): the restart has the record's list and
    closes the call with the result it would have had, never as interrupted."""
    marker = short_dir / "held"
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "pod" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(
        "[[hooks.PostToolUse]]\n"
        'matcher = "todo_write"\n'
        "[[hooks.PostToolUse.hooks]]\n"
        f"command = 'touch {marker}; sleep 60'\n"
        "timeout = 120\n"
        "sandbox = false\n"
    )
    script = short_dir / "script.json"
    call = todo_call(*PLAN, call_id="toolu_todo1")
    script.write_text(
        json.dumps({"replies": [{"text": "planning", "tool_calls": [call.model_dump()]}]})
    )
    socket, session = short_dir / "p.sock", short_dir / "session.jsonl"
    proc = start_pod_process(workspace, socket, session, script)
    try:
        c = await PodClient.connect(socket)
        await c.send("run", {"input": "plan it"})
        await c.wait_for("todos", timeout=30)
        for _ in range(3000):  # the hook runs once the record is on disk: the call is held
            if marker.exists():
                break
            await asyncio.sleep(0.01)
        else:
            raise AssertionError("the PostToolUse hook never ran")
        lines = [json.loads(line) for line in session.read_text().splitlines()[1:]]
        assert [r["type"] for r in lines if r["type"] == "todos"] == ["todos"]
        results = [r for r in lines if r["type"] == "item" and r["item"]["kind"] == "tool_result"]
        assert results == []  # held: killed between the record and the result
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        await c.close()
    finally:
        if proc.poll() is None:
            proc.kill()

    config.unlink()  # the restart runs no hook: the call is closed, never run again
    script.write_text(json.dumps({"replies": [{"text": "after the crash"}]}))
    proc = start_pod_process(workspace, socket, session, script, "--continue")
    try:
        c = await PodClient.connect(socket)
        status = (await c.request("get_status")).data
        assert status["status"] == "paused"
        assert contents(status["todos"]) == list(PLAN)
        items = (await c.request("get_history")).data["items"]
        [result] = [i for i in items if i["kind"] == "tool_result"]
        assert result["call_id"] == "toolu_todo1" and not result["is_error"]
        assert "[>] write the test" in result["content"]
        await c.send("run", {"input": "what now?"})
        events = await collect_until(c, "run_end", timeout=30)
        assert events[-1].data == {"result": "finished"}  # the scripted API took the history
        assert "todos" not in [e.event for e in events]  # the list did not change again
        assert contents((await c.request("get_status")).data["todos"]) == list(PLAN)
        await c.send("shutdown")
        await c.close()
        proc.wait(20)
    finally:
        if proc.poll() is None:
            proc.kill()


async def test_the_open_todos_are_in_the_first_request_after_a_compaction(
    workspace: Path, short_dir: Path
) -> None:
    """The summary is the model's words; the open items ride along verbatim beside it."""
    plan = (("read the code", "completed"), ("write the test", "in_progress"), ("fix", "pending"))
    long = "long " * 400
    replies = [
        ScriptedReply(text="planning", tool_calls=[todo_call(*plan)]),
        ScriptedReply(text=f"planned {long}", chunk_size=500),
        *(ScriptedReply(text=f"answer {k} {long}", chunk_size=500) for k in range(3)),
    ]
    async with running_pod(workspace, short_dir, replies=replies) as pod:
        c = await pod.client()
        for k in range(3):
            await run(c, f"turn {k}: go on")
        await c.send("compact", {})
        await collect_until(c, "compaction", timeout=30)
        await c.wait_for("status", state="idle")
        await run(c, "and now?")
        first = pod.provider.requests[-1].messages[0]
        text = first["content"][0]["text"]
        assert text.startswith("[Conversation summary")
        assert "[>] write the test (Doing write the test)\n[ ] fix" in text
        assert "read the code" not in text.split("[Open todos]")[1]  # done: not carried
        pod.assert_all_requests_valid()
        await c.close()
