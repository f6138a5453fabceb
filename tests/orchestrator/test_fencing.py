"""Fencing a fleet pod's session by ownership epoch: stamped lines, a writer that refuses once
superseded, and a loader that skips what a superseded owner wrote after the takeover."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from orchestrator.adapters.session import (
    Fence,
    SessionError,
    SessionFenced,
    SessionWriter,
    claim_session,
    is_disk_full,
    load_session,
    split_epoch,
    stamp_line,
)
from orchestrator.core.history import AssistantMessage, History, TextBlock, UserMessage
from orchestrator.core.segments import TextSegment


@dataclass
class Epochs:
    """An epoch store in memory: the consistent store of one test."""

    now: dict[str, int] = field(default_factory=dict)

    def current(self, pod: str) -> int:
        return self.now.get(pod, 0)

    def take(self, pod: str) -> Fence:
        self.now[pod] = self.current(pod) + 1
        return Fence(pod=pod, epoch=self.now[pod], store=self)


def _turn(writer: SessionWriter, history: History, text: str) -> None:
    history.new_turn()
    writer.append_item(history.append(UserMessage(segments=[TextSegment(text=text)], text=text)))
    reply = AssistantMessage(blocks=[TextBlock(text=f"re: {text}")], stop_reason="end_turn")
    writer.append_item(history.append(reply))
    writer.turn_end(history.turn, "finished")


def _one_turn(tmp_path: Path) -> tuple[Epochs, Path, SessionWriter, History]:
    """A session of one finished turn, written under epoch 1 by a writer still open."""
    epochs = Epochs()
    path = tmp_path / "s.jsonl"
    writer = SessionWriter(path, pod="p", workspace=tmp_path, fence=epochs.take("p"))
    history = History()
    _turn(writer, history, "one")
    return epochs, path, writer, history


def _texts(path: Path) -> list[str]:
    return [item.text for item in load_session(path).items if isinstance(item, UserMessage)]


def test_stamp_and_split_round_trip() -> None:
    line = b'{"type": "item", "item": {"kind": "user_message"}}'
    stamped = stamp_line(line, 12)
    assert stamped == b'{"epoch": 12, "type": "item", "item": {"kind": "user_message"}}'
    assert split_epoch(stamped) == (12, line)
    assert split_epoch(line) == (None, line)
    # Not a stamp after all: left for the general reader to report.
    assert split_epoch(b'{"epoch": "x", "type": "title"}') == (
        None,
        b'{"epoch": "x", "type": "title"}',
    )
    with pytest.raises(ValueError):
        stamp_line(b"{}", 1)


def test_a_fenced_session_loads_like_any_other(tmp_path: Path) -> None:
    _, path, writer, history = _one_turn(tmp_path)
    writer.close()
    assert all(line.startswith(b'{"epoch": 1, ') for line in path.read_bytes().splitlines())
    loaded = load_session(path)
    assert loaded.items == history.items
    assert loaded.turn_results == {1: "finished"}
    assert loaded.warnings == []


def test_a_superseded_writer_writes_nothing(tmp_path: Path) -> None:
    epochs, path, writer, _ = _one_turn(tmp_path)
    before = path.read_bytes()
    epochs.take("p")  # another host took the pod over
    with pytest.raises(SessionFenced) as caught:
        writer.turn_end(2, "finished")
    assert path.read_bytes() == before
    assert (caught.value.held, caught.value.current) == (1, 2)
    assert "another host took the pod over" in str(caught.value)
    # The transcript treats it as a write that failed, never as a full disk to wait out.
    assert not is_disk_full(caught.value)
    writer.close()


def test_the_loader_skips_what_a_superseded_owner_wrote_after_the_takeover(
    tmp_path: Path,
) -> None:
    """The race the check cannot close: the old owner, on another machine (its ``flock`` is
    not seen here), checked its epoch, then the new owner claimed the file, then the old
    owner's writes landed. Every later load skips them."""
    epochs = Epochs()
    path = tmp_path / "s.jsonl"
    first = epochs.take("p")
    old = SessionWriter(path, pod="p", workspace=tmp_path, fence=first)
    old_history = History()
    _turn(old, old_history, "before the takeover")
    old.close()

    new_fence = epochs.take("p")
    assert claim_session(path, new_fence, host="h2")
    [claim] = [line for line in path.read_bytes().splitlines() if b'"type":"fence"' in line]
    assert claim.count(b'"epoch"') == 1  # the claim names its epoch once, itself
    # The old owner's next turn, as its machine wrote it: stamped with epoch 1, which its
    # check still saw. Written aside, then appended the way its O_APPEND writes land.
    aside = tmp_path / "aside.jsonl"
    late = SessionWriter(aside, pod="p", workspace=tmp_path, fence=Fence("p", 1, Epochs({"p": 1})))
    _turn(late, old_history, "from the cut-off host")
    late.close()
    with path.open("ab") as file:
        file.write(b"".join(aside.read_bytes().splitlines(keepends=True)[1:]))

    new = SessionWriter(path, pod="p", workspace=tmp_path, fence=new_fence)
    loaded = load_session(path)
    assert _texts(path) == ["before the takeover"]
    assert loaded.epoch == 2
    assert sum("superseded owner (epoch 1 < 2)" in w for w in loaded.warnings) == 3
    history = History(loaded.items, next_seq=loaded.next_seq, turn=loaded.last_turn)
    _turn(new, history, "from the new owner")
    new.close()
    assert _texts(path) == ["before the takeover", "from the new owner"]
    # The new owner numbers on from what it read; the stale items of the same numbers are
    # gone, not mixed in.
    assert [item.seq for item in load_session(path).items] == [1, 2, 3, 4]
    assert load_session(path).items[2].turn == 2


def test_what_the_old_owner_wrote_before_the_claim_is_kept(tmp_path: Path) -> None:
    epochs, path, old, _ = _one_turn(tmp_path)
    old.close()
    assert claim_session(path, epochs.take("p"), host="h2")
    assert _texts(path) == ["one"]
    assert load_session(path).warnings == []


def test_claiming_a_session_a_live_process_here_holds_is_refused(tmp_path: Path) -> None:
    epochs, path, old, _ = _one_turn(tmp_path)
    before = path.read_bytes()
    with pytest.raises(SessionError, match="still writes it"):
        claim_session(path, epochs.take("p"), host="h2")
    assert path.read_bytes() == before
    old.close()


def test_claiming_no_file_or_an_empty_one_claims_nothing(tmp_path: Path) -> None:
    epochs = Epochs()
    assert not claim_session(tmp_path / "none.jsonl", epochs.take("p"), host="h")
    (tmp_path / "empty.jsonl").touch()
    assert not claim_session(tmp_path / "empty.jsonl", epochs.take("p"), host="h")


def test_a_claim_ends_a_torn_last_line_first(tmp_path: Path) -> None:
    epochs, path, old, _ = _one_turn(tmp_path)
    old.close()
    with path.open("ab") as file:
        file.write(b'{"epoch": 1, "type": "item", "item": {"kind": "us')  # died mid-write
    assert claim_session(path, epochs.take("p"), host="h2")
    loaded = load_session(path)
    assert loaded.epoch == 2
    assert [w.split(": ", 1)[1] for w in loaded.warnings] == ["bad line ignored"]
