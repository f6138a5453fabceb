"""The transcript on writer threads: group commit, ordered completion, events held behind the
writes before them, and a refusing disk, over a real session file."""

from __future__ import annotations

import asyncio
import errno
import json
import threading
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from orchestrator.adapters.session import (
    SessionWriteError,
    SessionWriter,
    ToolStartRecord,
    load_session,
)
from orchestrator.core.history import History, UserMessage
from orchestrator.runtime.transcript import Transcript


class GatedWriter(SessionWriter):
    """A real session writer that counts its syncs, can be held mid-write, and can refuse."""

    def __init__(self, path: Path, workspace: Path) -> None:
        self.batches: list[list[bytes]] = []
        self.gate = threading.Event()
        self.gate.set()
        self.entered = threading.Event()
        self.full = False
        super().__init__(path, pod="p", workspace=workspace)
        self.batches.clear()  # the header

    def write_lines(self, lines: list[bytes]) -> None:
        self.entered.set()
        self.gate.wait(10)
        if self.full:
            raise SessionWriteError(self.path, OSError(errno.ENOSPC, "No space left on device"))
        super().write_lines(lines)
        self.batches.append(lines)


@pytest.fixture
async def pool() -> AsyncIterator[ThreadPoolExecutor]:
    executor = ThreadPoolExecutor(max_workers=2)
    yield executor
    executor.shutdown(wait=True)


def _transcript(
    tmp_path: Path, pool: ThreadPoolExecutor
) -> tuple[Transcript, GatedWriter, list[dict[str, object]]]:
    writer = GatedWriter(tmp_path / "s.jsonl", tmp_path)
    seen: list[dict[str, object]] = []
    history = History()
    history.new_turn()
    transcript = Transcript(
        history=history, session=writer, broadcast=lambda line: seen.append(json.loads(line))
    )
    transcript.serving = True
    transcript.write_in_background(pool)
    return transcript, writer, seen


def _events(seen: list[dict[str, object]]) -> list[str]:
    return [str(e["event"]) for e in seen]


def _said(transcript: Transcript, seen: list[dict[str, object]]) -> list[str]:
    """Each event's name, or for an announced user message its text."""
    texts = {item.seq: item.text for item in transcript.history.items}  # type: ignore[union-attr]
    return [
        texts[e["data"]["seq"]] if e["event"] == "user_message" else str(e["event"])  # type: ignore[index]
        for e in seen
    ]


async def _until(condition: threading.Event) -> None:
    await asyncio.to_thread(condition.wait, 10)


async def test_commits_of_one_stretch_are_written_with_one_sync(
    tmp_path: Path, pool: ThreadPoolExecutor
) -> None:
    transcript, writer, seen = _transcript(tmp_path, pool)
    for text in ("a", "b", "c"):
        transcript.commit(UserMessage(text=text))
    transcript.end_turn(1, "finished")
    assert seen == []  # nothing is announced before it is on disk
    await transcript.settled()
    assert [len(batch) for batch in writer.batches] == [4]
    assert _said(transcript, seen) == ["a", "b", "c"]
    transcript.close()
    loaded = load_session(tmp_path / "s.jsonl")
    assert [i.text for i in loaded.items] == ["a", "b", "c"]  # type: ignore[union-attr]


async def test_commits_made_during_a_write_form_the_next_batch_in_order(
    tmp_path: Path, pool: ThreadPoolExecutor
) -> None:
    transcript, writer, seen = _transcript(tmp_path, pool)
    writer.gate.clear()
    transcript.commit(UserMessage(text="first"))
    await _until(writer.entered)  # the first batch is on a writer thread, held there
    transcript.commit(UserMessage(text="second"))
    transcript.emit("status", {"status": "after second"})
    transcript.commit(UserMessage(text="third"))
    # The loop goes on while the disk is slow: other coroutines run.
    ran = 0
    for _ in range(50):
        await asyncio.sleep(0)
        ran += 1
    assert ran == 50 and writer.batches == [] and seen == []
    writer.gate.set()
    await transcript.settled()
    assert [len(batch) for batch in writer.batches] == [1, 2]
    assert _said(transcript, seen) == ["first", "second", "status", "third"]
    assert transcript.durable


async def test_a_synchronous_flush_waits_for_the_batch_in_flight_and_keeps_order(
    tmp_path: Path, pool: ThreadPoolExecutor
) -> None:
    transcript, writer, seen = _transcript(tmp_path, pool)
    writer.gate.clear()
    transcript.commit(UserMessage(text="in flight"))
    await _until(writer.entered)
    transcript.commit(UserMessage(text="queued"))
    threading.Timer(0.05, writer.gate.set).start()
    transcript.require_durable()  # blocks this thread until both are on disk
    assert [len(batch) for batch in writer.batches] == [1, 1]
    assert _said(transcript, seen) == ["in flight", "queued"]
    await asyncio.sleep(0.01)  # the thread's late callback for the first batch changes nothing
    assert len(seen) == 2 and transcript.durable


async def test_a_refusing_disk_holds_the_records_and_releases_the_events(
    tmp_path: Path, pool: ThreadPoolExecutor
) -> None:
    transcript, writer, seen = _transcript(tmp_path, pool)
    writer.full = True
    transcript.commit(UserMessage(text="kept"))
    transcript.emit("status", {"status": "running"})
    with pytest.raises(SessionWriteError, match="No space"):
        await transcript.settled()
    # The event a synchronous writer would have sent goes out; the item waits, unannounced.
    assert _events(seen) == ["status", "alert"]
    assert transcript.waiting == 1 and [i.text for i in transcript.view()] == ["kept"]  # type: ignore[union-attr]
    transcript.emit("text_delta", {"text": "x"})  # not held behind a refused write
    assert _events(seen)[-1] == "text_delta"
    # A commit while the disk refuses waits behind the refused records and does not try
    # the disk by itself (each try writes part of a line, then cuts it back): only a caller
    # that needs them on disk does (settled: before a request, an unload, a stop).
    writer.entered.clear()
    transcript.commit(UserMessage(text="after"))
    await asyncio.sleep(0.05)  # a turn of the loop or two: a kicked batch would start here
    assert not writer.entered.is_set() and transcript.waiting == 2
    writer.full = False
    await transcript.settled()
    assert _events(seen)[-3:] == ["user_message", "user_message", "alert"]
    assert "writable again" in str(seen[-1]["data"])
    transcript.close()
    loaded = load_session(tmp_path / "s.jsonl")
    assert [i.text for i in loaded.items] == ["kept", "after"]  # type: ignore[union-attr]


async def test_a_tool_start_the_disk_refused_is_never_written_later(
    tmp_path: Path, pool: ThreadPoolExecutor
) -> None:
    transcript, writer, _ = _transcript(tmp_path, pool)
    transcript.commit(UserMessage(text="go"))
    await transcript.settled()
    writer.full = True
    record = ToolStartRecord(call_id="c1", name="bash", started_ms=1)
    with pytest.raises(SessionWriteError):
        await transcript.record_tool_start(record)
    assert transcript.durable  # nothing waits: the start is dropped, not deferred
    writer.full = False
    transcript.commit(UserMessage(text="later"))
    await transcript.settled()
    transcript.close()
    kinds = [json.loads(line)["type"] for line in (tmp_path / "s.jsonl").read_text().splitlines()]
    assert kinds == ["session", "item", "item"]


async def test_a_tool_start_is_on_disk_with_everything_before_it_when_it_returns(
    tmp_path: Path, pool: ThreadPoolExecutor
) -> None:
    transcript, writer, _ = _transcript(tmp_path, pool)
    transcript.commit(UserMessage(text="call a tool"))
    await transcript.record_tool_start(ToolStartRecord(call_id="c1", name="bash", started_ms=1))
    kinds = [json.loads(line)["type"] for batch in writer.batches for line in batch]
    assert kinds == ["item", "tool_start"]
    transcript.close()
