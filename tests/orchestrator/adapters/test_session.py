"""The session file: fsync'd JSONL, private, torn tails survived, cut-off turns detected."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.adapters.session import (
    SessionError,
    SessionLocked,
    SessionWriter,
    ToolNotStartedRecord,
    ToolStartRecord,
    latest_session,
    list_sessions,
    load_session,
    lock_path,
    new_session_path,
    resolve_session,
    session_holder,
    session_title,
    sessions_dir,
    summarize_session,
)
from orchestrator.adapters.session import lock as lock_module
from orchestrator.core.history import AssistantMessage, History, TextBlock, ToolResult, UserMessage
from orchestrator.core.segments import FileRefSegment, PasteSegment, TextSegment


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


def test_a_start_that_did_not_happen_is_cancelled_until_the_call_starts_again(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.jsonl"
    writer = SessionWriter(path, pod="p", workspace=tmp_path)
    writer.tool_start(ToolStartRecord(call_id="c1", name="bash", started_ms=1))
    writer.tool_start(ToolStartRecord(call_id="c2", name="bash", started_ms=1))
    writer.record(ToolNotStartedRecord(call_id="c1"))
    writer.record(ToolNotStartedRecord(call_id="c2"))
    writer.tool_start(ToolStartRecord(call_id="c2", name="bash", started_ms=2))  # Resume ran it
    writer.close()
    loaded = load_session(path)
    assert not loaded.warnings
    assert list(loaded.started_calls) == ["c2"]
    assert loaded.started_calls["c2"].started_ms == 2


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
    assert session_holder(path) == {
        "pod": "alpha", "pid": os.getpid(), "socket": "/x/a.sock", "machine": lock_module.MACHINE,
    }  # fmt: skip
    with pytest.raises(SessionLocked, match=r"in use by another pod \(pod alpha, pid \d+"):
        SessionWriter(path, pod="beta", workspace=tmp_path)
    first.close()
    assert session_holder(path) is None
    assert not lock_path(path).exists()  # a clean stop leaves no .lock file behind
    second = SessionWriter(path, pod="beta", workspace=tmp_path)
    assert session_holder(path) == {
        "pod": "beta",
        "pid": os.getpid(),
        "machine": lock_module.MACHINE,
    }
    second.close()
    assert len(path.read_text().splitlines()) == 1  # one header: the refused writer wrote nothing
    assert sorted(p.name for p in tmp_path.glob("s.*")) == ["s.jsonl"]


@pytest.mark.parametrize("link", ["symlink", "hardlink"])
def test_a_session_is_locked_by_its_file_not_its_path(tmp_path: Path, link: str) -> None:
    path = tmp_path / "s.jsonl"
    first = SessionWriter(path, pod="alpha", workspace=tmp_path)
    other = tmp_path / "elsewhere"
    other.mkdir()
    alias = other / "alias.jsonl"
    if link == "symlink":
        alias.symlink_to(path)
    else:
        os.link(path, alias)
    assert session_holder(alias) is not None
    with pytest.raises(SessionLocked, match="in use by another pod"):
        SessionWriter(alias, pod="beta", workspace=tmp_path)
    first.close()
    assert session_holder(alias) is None
    SessionWriter(alias, pod="beta", workspace=tmp_path).close()


def test_the_lock_dies_with_its_holder(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    code = (
        "import sys, time; from pathlib import Path; "
        "from orchestrator.adapters.session import SessionWriter; "
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


_KILLED_FORKING = """
import os, sys, time
from pathlib import Path
from orchestrator.adapters.session import SessionWriter
SessionWriter(Path(sys.argv[1]), pod="dead", workspace=Path("."))
child = os.fork()
if child == 0:  # a command being started: its copy of the lock goes when it execs
    os.close(1)
    os.close(2)
    time.sleep(float(sys.argv[2]))
    os._exit(0)
print(child, flush=True)
os._exit(0)  # the pod, killed
"""


def _die_forking(path: Path, child_holds_s: float) -> int:
    """A pod that exits while its half-started command still holds the session's lock; the
    command's pid."""
    said = subprocess.run(
        [sys.executable, "-c", _KILLED_FORKING, str(path), str(child_holds_s)],
        capture_output=True,
        timeout=30,
    )
    return int(said.stdout)


def test_a_lock_left_for_a_moment_by_a_dead_pods_command_is_waited_for(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    child = _die_forking(path, 0.3)
    try:
        assert session_holder(path) is not None  # named by a pod that is gone
        SessionWriter(path, pod="restarted", workspace=tmp_path).close()
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)


def test_a_lock_a_dead_pods_leftover_keeps_is_refused_after_the_wait(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lock_module, "LEFT_BY_THE_DEAD_WAIT_S", 0.2)
    path = tmp_path / "s.jsonl"
    child = _die_forking(path, 60)
    try:
        with pytest.raises(SessionLocked, match="pod dead"):
            SessionWriter(path, pod="restarted", workspace=tmp_path)
    finally:
        os.kill(child, signal.SIGKILL)


def test_a_holder_of_another_machine_is_not_waited_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Its pid means nothing here (a session on a shared disk): refused at once, as before,
    # its pid never looked up.
    path = tmp_path / "s.jsonl"
    child = _die_forking(path, 60)

    def looked_up(pid: int) -> bool:
        raise AssertionError(f"pid {pid} of another machine was looked up here")

    try:
        monkeypatch.setattr(lock_module, "MACHINE", "another-machine")
        monkeypatch.setattr(lock_module, "exited", looked_up)
        with pytest.raises(SessionLocked, match="pod dead"):
            SessionWriter(path, pod="restarted", workspace=tmp_path)
    finally:
        os.kill(child, signal.SIGKILL)


def _session(workspace: Path, *, turns: int, end: bool = True, mtime: int = 0) -> Path:
    """A session of the workspace with ``turns`` turns (the last one open unless ``end``)."""
    path = new_session_path(workspace)
    writer = SessionWriter(path, pod="p", workspace=workspace)
    history = History()
    for n in range(turns):
        _write_turn(writer, history, end=end or n < turns - 1)
    writer.close()
    if mtime:
        os.utime(path, (mtime, mtime))
    return path


def test_continuing_skips_sessions_without_a_conversation(tmp_path: Path) -> None:
    talk = _session(tmp_path, turns=2, mtime=1_000)
    empty = _session(tmp_path, turns=0, mtime=2_000)
    assert latest_session(tmp_path) == empty
    assert latest_session(tmp_path, with_content=True) == talk
    empty.write_text("not a session\n")  # an unreadable newer file is skipped too
    assert latest_session(tmp_path, with_content=True) == talk


def test_a_session_is_named_by_ls_name_or_by_path(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    path = _session(ws, turns=1)
    assert resolve_session(ws, path.stem) == path
    assert resolve_session(ws, path.name) == path
    assert resolve_session(ws, str(path)) == path
    new = tmp_path / "elsewhere" / "new.jsonl"
    assert resolve_session(ws, str(new)) == new  # a path may name a session to create
    with pytest.raises(SessionError, match=r"no session 'typo' for .*pod sessions ls"):
        resolve_session(ws, "typo")
    with pytest.raises(SessionError, match="is a directory"):
        resolve_session(ws, str(tmp_path))
    with pytest.raises(SessionError, match="empty"):
        resolve_session(ws, " ")


def test_a_title_is_the_first_user_message_unless_one_was_given(tmp_path: Path) -> None:
    items = [
        UserMessage(
            segments=[
                TextSegment(text="Explain\n  "),
                FileRefSegment(path="src/app.py"),
                TextSegment(text=" and "),
                PasteSegment(id=1, text="a very long paste " * 100),
            ]
        ),
        UserMessage(segments=[TextSegment(text="second")]),
    ]
    assert session_title(items) == "Explain @src/app.py and [pasted text]"
    assert session_title(items, "Mine") == "Mine"
    assert session_title([]) == ""
    long = [UserMessage(segments=[TextSegment(text="word " * 40)])]
    assert len(session_title(long)) == 60 and session_title(long).endswith("…")


def test_a_title_record_is_kept_and_older_files_have_none(tmp_path: Path) -> None:
    path = _session(tmp_path, turns=1)
    assert load_session(path).title is None
    assert summarize_session(path).title == "hi"
    writer = SessionWriter(path, pod="p", workspace=tmp_path)
    writer.title("first")
    writer.title("second")
    writer.close()
    assert load_session(path).title == "second"
    assert summarize_session(path).title == "second"


def test_the_state_says_what_it_means(tmp_path: Path) -> None:
    closed = _session(tmp_path, turns=2, mtime=1_000)
    open_ = _session(tmp_path, turns=2, end=False, mtime=2_000)
    empty = _session(tmp_path, turns=0, mtime=3_000)
    broken = sessions_dir(tmp_path) / "broken.jsonl"
    broken.write_text("{}\n")
    os.utime(broken, (4_000, 4_000))
    rows = list_sessions(tmp_path)
    assert [(r.name, r.state, r.turns) for r in rows] == [
        (closed.stem, "turn closed", 2),
        (open_.stem, "turn open", 2),
        (empty.stem, "empty", 0),
        ("broken", "unreadable", 0),
    ]
    assert rows[3].error is not None and "not a session header" in rows[3].error
    live = SessionWriter(open_, pod="alpha", workspace=tmp_path)
    try:
        row = summarize_session(open_)
        assert (row.state, row.holder and row.holder["pod"]) == ("live", "alpha")
    finally:
        live.close()


def test_a_clean_stop_discards_a_session_it_created_and_wrote_nothing_to(tmp_path: Path) -> None:
    empty, used, older = tmp_path / "empty.jsonl", tmp_path / "used.jsonl", tmp_path / "old.jsonl"
    SessionWriter(empty, pod="p", workspace=tmp_path).close(discard_if_empty=True)
    assert not empty.exists() and not lock_path(empty).exists()

    writer = SessionWriter(used, pod="p", workspace=tmp_path)
    writer.title("named, if nothing else")
    writer.close(discard_if_empty=True)
    assert len(used.read_text().splitlines()) == 2

    # A session it did not create is never removed, however little it holds.
    SessionWriter(older, pod="p", workspace=tmp_path).close()
    SessionWriter(older, pod="p", workspace=tmp_path).close(discard_if_empty=True)
    assert older.exists()
    # An unload (or anything but a clean stop) keeps even an empty one.
    SessionWriter(empty, pod="p", workspace=tmp_path).close()
    assert empty.exists()


def test_a_spend_record_with_a_negative_count_is_a_bad_line(tmp_path: Path) -> None:
    """A session file is input too: a crafted ``spend`` record cannot credit the cost."""
    path = tmp_path / "s.jsonl"
    SessionWriter(path, pod="p", workspace=tmp_path).close()
    with path.open("a") as file:
        file.write('{"type":"spend","turn":1,"source":"sampling:x","usage":{"output_tokens":-9}}\n')
        file.write('{"type":"spend","turn":1,"source":"sampling:x","usage":{"output_tokens":7}}\n')
    loaded = load_session(path)
    assert [s.usage for s in loaded.spends] == [{"output_tokens": 7}]
    assert any("bad line" in w for w in loaded.warnings)


def test_a_new_session_is_named_apart_from_every_workspaces_sessions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An editor knows a session by its name alone (ACP's session id): a fork into another
    folder, started in the same second as its origin, gets a name of its own."""
    from orchestrator.adapters.session import catalog

    monkeypatch.setattr(catalog.time, "strftime", lambda _format: "20260101-000000")
    ws_a, ws_b = tmp_path / "a", tmp_path / "b"
    ws_a.mkdir()
    ws_b.mkdir()
    first = new_session_path(ws_a)
    SessionWriter(first, pod="a", workspace=ws_a).close()
    second = new_session_path(ws_b)
    assert (first.name, second.name) == ("20260101-000000.jsonl", "20260101-000000-2.jsonl")
    assert second.parent == sessions_dir(ws_b)
