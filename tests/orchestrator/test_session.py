"""The session file: fsync'd JSONL, private, torn tails survived, cut-off turns detected."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.history import AssistantMessage, History, TextBlock, ToolResult, UserMessage
from orchestrator.segments import TextSegment
from orchestrator.session import (
    SessionError,
    SessionLocked,
    SessionWriter,
    latest_session,
    load_session,
    new_session_path,
    session_holder,
    sessions_dir,
)


def _write_turn(writer: SessionWriter, history: History, *, end: bool) -> None:
    history.new_turn()
    for item in (
        UserMessage(segments=[TextSegment(text="hi")], text="hi"),
        AssistantMessage(blocks=[TextBlock(text="hello")], stop_reason="end_turn"),
    ):
        writer.append_item(history.append(item))
    if end:
        writer.turn_end(history.turn, "finished")


def test_round_trip_and_permissions(tmp_path: Path) -> None:
    path = tmp_path / "s" / "one.jsonl"
    writer = SessionWriter(path, pod="p", workspace=tmp_path)
    history = History()
    _write_turn(writer, history, end=True)
    writer.prune(2, 10)
    writer.close()
    loaded = load_session(path)
    assert loaded.items == history.items
    assert loaded.turn_results == {1: "finished"}
    assert loaded.prune_before_turn == 2
    assert not loaded.cut_off
    assert loaded.header.pod == "p"
    assert (path.stat().st_mode & 0o777) == 0o600
    assert (path.parent.stat().st_mode & 0o777) == 0o700


def test_a_turn_without_turn_end_is_cut_off(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    writer = SessionWriter(path, pod="p", workspace=tmp_path)
    history = History()
    _write_turn(writer, history, end=True)
    _write_turn(writer, history, end=False)
    writer.close()
    assert load_session(path).cut_off


def test_torn_last_line_is_ignored_and_reported_then_appending_continues(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    writer = SessionWriter(path, pod="p", workspace=tmp_path)
    history = History()
    _write_turn(writer, history, end=True)
    writer.close()
    with path.open("ab") as f:
        f.write(b'{"type": "item", "item": {"kind": "tool_res')  # the crash hit mid-write
    loaded = load_session(path)
    assert loaded.items == history.items
    assert loaded.warnings == [f"{path.name}:5: torn last line (the pod stopped mid-write) ignored"]
    # Reopening ends the torn line first, so the next record is readable.
    writer = SessionWriter(path, pod="p", workspace=tmp_path)
    extra = history.append(ToolResult(call_id="x", summary="late"))
    writer.append_item(extra)
    writer.close()
    again = load_session(path)
    assert again.items == [*history.items]
    assert len(again.warnings) == 1


def test_duplicate_and_garbage_lines_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    writer = SessionWriter(path, pod="p", workspace=tmp_path)
    history = History()
    _write_turn(writer, history, end=False)
    writer.close()
    lines = path.read_text().splitlines()
    path.write_text("\n".join([*lines, lines[1], "not json"]) + "\n")
    loaded = load_session(path)
    assert loaded.items == history.items
    assert [w.split(": ", 1)[1] for w in loaded.warnings] == [
        "duplicate item 1 ignored",
        "bad line ignored",
    ]


def test_unreadable_sessions_raise_clear_errors(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(SessionError, match="is empty"):
        load_session(empty)
    headless = tmp_path / "headless.jsonl"
    headless.write_text(json.dumps({"type": "item"}) + "\n")
    with pytest.raises(SessionError, match="not a session header"):
        load_session(headless)
    with pytest.raises(SessionError, match="cannot read"):
        load_session(tmp_path / "missing.jsonl")


def test_paths_are_per_workspace_and_latest_is_newest(tmp_path: Path) -> None:
    ws_a, ws_b = tmp_path / "a", tmp_path / "b"
    ws_a.mkdir()
    ws_b.mkdir()
    assert sessions_dir(ws_a) != sessions_dir(ws_b)
    assert latest_session(ws_a) is None
    first = new_session_path(ws_a)
    SessionWriter(first, pod="a", workspace=ws_a).close()
    second = new_session_path(ws_a)
    assert second != first
    SessionWriter(second, pod="a", workspace=ws_a).close()
    os.utime(first, (1, 1))
    assert latest_session(ws_a) == second


def test_a_second_writer_is_refused_and_told_who_holds_the_session(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    first = SessionWriter(path, pod="alpha", workspace=tmp_path, holder={"socket": "/x/a.sock"})
    assert session_holder(path) == {"pod": "alpha", "pid": os.getpid(), "socket": "/x/a.sock"}
    with pytest.raises(SessionLocked, match=r"in use by another pod \(pod alpha, pid \d+"):
        SessionWriter(path, pod="beta", workspace=tmp_path)
    first.close()
    assert session_holder(path) is None
    second = SessionWriter(path, pod="beta", workspace=tmp_path)
    second.close()
    assert len(path.read_text().splitlines()) == 1  # one header: the refused writer wrote nothing


def test_the_lock_dies_with_its_holder(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    code = (
        "import sys, time; from pathlib import Path; "
        "from orchestrator.session import SessionWriter; "
        f"SessionWriter(Path({str(path)!r}), pod='held', workspace=Path('.')); "
        "print('ready', flush=True); time.sleep(60)"
    )
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        with pytest.raises(SessionLocked, match="pod held"):
            SessionWriter(path, pod="p", workspace=tmp_path)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    SessionWriter(path, pod="p", workspace=tmp_path).close()
