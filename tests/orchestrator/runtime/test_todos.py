"""The todo list as session state: its record is on disk before clients hear of it (and so
before the call's result), a refused record takes the list back, a rewind restores the list
of before the prompt, a loaded file rewinds it too, and a crash between the record and the
result closes the call from the record."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from orchestrator.adapters.session import (
    RewindRecord,
    SessionWriteError,
    load_session,
)
from orchestrator.core.history import AssistantMessage, Item, ToolUseBlock, UserMessage
from orchestrator.core.todos import Todo
from orchestrator.runtime.todos import TodoBoard, close_recorded_todo_calls
from tests.orchestrator.runtime.test_transcript import _events, _transcript, _until, pool

__all__ = ["pool"]  # the fixture, used here by name

PLAN = (Todo("write the test", "in_progress"), Todo("fix the bug"))
LATER = (Todo("write the test", "completed"), Todo("fix the bug", "in_progress"))


def _records(path: Path) -> list[dict[str, object]]:
    lines = path.read_text().splitlines()[1:]
    return [json.loads(line) for line in lines if json.loads(line)["type"] == "todos"]


async def test_clients_hear_of_a_list_once_its_record_is_on_disk(
    tmp_path: Path, pool: ThreadPoolExecutor
) -> None:
    transcript, writer, seen = _transcript(tmp_path, pool)
    board = TodoBoard(transcript)
    transcript.commit(UserMessage(text="plan it"))
    writer.gate.clear()
    writing = asyncio.ensure_future(board.write("toolu_1", PLAN))
    await _until(writer.entered)
    assert "todos" not in _events(seen) and not writing.done()
    writer.gate.set()
    await writing
    assert _events(seen)[-1] == "todos"
    assert board.current == PLAN
    [record] = _records(tmp_path / "s.jsonl")
    assert record["call_id"] == "toolu_1" and record["seq"] == 2  # before item 2
    data = seen[-1]["data"]
    assert data == {
        "todos": [
            {"content": "write the test", "status": "in_progress", "active_form": None},
            {"content": "fix the bug", "status": "pending", "active_form": None},
        ]
    }
    transcript.close()


async def test_a_record_the_disk_refuses_leaves_the_list_as_it_was(
    tmp_path: Path, pool: ThreadPoolExecutor
) -> None:
    transcript, writer, seen = _transcript(tmp_path, pool)
    board = TodoBoard(transcript)
    await board.write("toolu_1", PLAN)
    writer.full = True
    with pytest.raises(SessionWriteError):
        await board.write("toolu_2", LATER)
    assert board.current == PLAN
    assert [e for e in _events(seen) if e == "todos"] == ["todos"]  # the refused one: unsaid
    writer.full = False
    transcript.close()
    assert [r["call_id"] for r in _records(tmp_path / "s.jsonl")] == ["toolu_1"]


async def test_a_rewind_goes_back_to_the_list_before_the_prompt(
    tmp_path: Path, pool: ThreadPoolExecutor
) -> None:
    transcript, _, seen = _transcript(tmp_path, pool)
    board = TodoBoard(transcript)
    transcript.commit(UserMessage(text="first"))  # seq 1
    await board.write("toolu_1", PLAN)
    second = transcript.commit(UserMessage(text="second"))  # seq 2
    await board.write("toolu_2", LATER)
    before = len(seen)
    board.rewind(second.seq)
    await transcript.settled()
    assert board.current == PLAN
    assert _events(seen)[before:] == ["todos"]
    board.rewind(second.seq)  # nothing changes: nothing said
    board.rewind(1)
    assert not board.current
    transcript.close()


def test_a_loaded_session_rewinds_its_lists_too(tmp_path: Path) -> None:
    from orchestrator.adapters.session import SessionWriter
    from orchestrator.core.todos import TodoVersion
    from orchestrator.runtime.todos import record_of

    path = tmp_path / "s.jsonl"
    writer = SessionWriter(path, pod="p", workspace=tmp_path)
    writer.append_item(UserMessage(text="first", seq=1, turn=1))
    writer.record(record_of(TodoVersion(seq=2, todos=PLAN, call_id="a")))
    writer.append_item(UserMessage(text="second", seq=2, turn=2))
    writer.record(record_of(TodoVersion(seq=3, todos=LATER, call_id="b")))
    loaded = load_session(path)
    assert [r.call_id for r in loaded.todos] == ["a", "b"]
    writer.record(RewindRecord(phase="done", to_seq=2, restore="conversation"))
    writer.close()
    assert [r.call_id for r in load_session(path).todos] == ["a"]


def test_a_call_with_a_record_and_no_result_is_closed_from_the_record(tmp_path: Path) -> None:
    from orchestrator.core.todos import TodoVersion
    from orchestrator.runtime.todos import record_of

    call = ToolUseBlock(id="toolu_1", name="todo_write", input={"todos": []})
    other = ToolUseBlock(id="toolu_2", name="read_file", input={"path": "a"})
    items: list[Item] = [
        UserMessage(text="plan", seq=1, turn=1),
        AssistantMessage(blocks=[call, other], seq=2, turn=1, stop_reason="tool_use"),
    ]
    record = record_of(TodoVersion(seq=3, todos=PLAN, call_id="toolu_1"))
    [result] = close_recorded_todo_calls(items, [record])
    assert result.call_id == "toolu_1" and not result.is_error
    assert (
        result.content
        == "The todo list now (0 of 2 completed):\n[>] write the test\n[ ] fix the bug"
    )
    # A call that never got to write its list stays for Resume, as any unstarted read.
    assert close_recorded_todo_calls(items, []) == []


async def test_the_list_survives_an_unload_and_reload(workspace: Path) -> None:
    """What a host's eviction does (the session closed without a shutdown) and its next load:
    a paused turn's list and an idle one's come back; nothing of it lives only in memory."""
    from orchestrator.adapters.providers.scripted import ScriptedReply, ScriptedToolCall
    from orchestrator.runtime.unload import unload_session
    from tests.orchestrator.runtime.test_unload import Harness, send, settled

    todos = [{"content": "write the test", "status": "in_progress"}]
    call = ScriptedToolCall(name="todo_write", input={"todos": todos})
    slow = ScriptedReply(text="x" * 200, chunk_size=2, chunk_delay_s=0.005)
    pods = Harness(workspace)
    pod, events = pods.build([ScriptedReply(text="plan", tool_calls=[call]), slow])
    send(pod, "run", input="plan it")
    await events.wait_for("todos")
    await events.wait_for("text_delta", count=2)  # the round after the call streams
    send(pod, "pause")
    await settled(pod)
    assert pod.controller.todos is not None
    assert [t.content for t in pod.controller.todos.current] == ["write the test"]
    unload_session(pod.controller)

    again, _ = pods.build([ScriptedReply(text="done")])
    status = again.controller.board.data()
    assert status.status == "paused"
    assert [(t.content, t.status) for t in status.todos] == [("write the test", "in_progress")]
    again.controller.transcript.session.close()
