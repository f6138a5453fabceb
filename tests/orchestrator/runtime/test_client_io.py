"""The pod's side of the editor's files (:mod:`orchestrator.runtime.client_io`) with the file
tools' port over a real scoped file system: requests go to the offering client only, every
failure falls back to the pod's own reading and writing (said once), and an answer to a
request that is over is refused."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from orchestrator.adapters.scoped_fs import FsError, ScopedFS
from orchestrator.capabilities.tools.client_files import read_through, write_through
from orchestrator.protocol import ClientIoResultParams
from orchestrator.runtime import client_io
from orchestrator.runtime.client_io import ClientIo


class Line:
    """A client connection: the lines the pod sent it."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        self.arrived = asyncio.Event()

    def __call__(self, line: bytes) -> None:
        self.sent.append(json.loads(line))
        self.arrived.set()

    async def request(self) -> dict[str, Any]:
        while not self.sent:
            self.arrived.clear()
            await asyncio.wait_for(self.arrived.wait(), 10)
        return self.sent.pop(0)["data"]


def _io() -> tuple[ClientIo, list[tuple[str, str, str]]]:
    alerts: list[tuple[str, str, str]] = []
    return ClientIo(lambda *alert: alerts.append(alert)), alerts


async def test_a_read_and_a_write_go_to_the_offering_client_only(workspace: Path) -> None:
    io, alerts = _io()
    fs = ScopedFS(workspace)
    (workspace / "a.txt").write_text("on disk\n")
    other, editor = Line(), Line()
    io.offer(other, True)
    io.offer(editor, True)  # the latest offer wins
    reading = asyncio.ensure_future(read_through(io, fs, "a.txt", "toolu_1"))
    asked = await editor.request()
    assert (asked["op"], asked["path"], asked["call_id"]) == (
        "read_text_file",
        str((workspace / "a.txt").resolve()),
        "toolu_1",
    )
    assert (
        io.answer(ClientIoResultParams(id=asked["id"], ok=True, content="in the buffer\n")) is None
    )
    file = await reading
    assert file is not None and file.text == "in the buffer\n"

    writing = asyncio.ensure_future(write_through(io, fs, "b/c.txt", "new\n", "toolu_2"))
    asked = await editor.request()
    assert asked["op"] == "write_text_file" and asked["content"] == "new\n"
    Path(asked["path"]).write_text("new\n")  # the editor saves it
    io.answer(ClientIoResultParams(id=asked["id"], ok=True))
    written, note = await writing or (None, None)
    assert written == (workspace / "b" / "c.txt").resolve() and note == ""
    assert other.sent == [] and alerts == []
    # Over now: a second answer to it is refused.
    assert "no file request" in (io.answer(ClientIoResultParams(id=asked["id"], ok=True)) or "")


async def test_a_refusal_falls_back_and_is_said_once(workspace: Path) -> None:
    io, alerts = _io()
    fs = ScopedFS(workspace)
    editor = Line()
    io.offer(editor, True)
    for n in range(2):
        writing = asyncio.ensure_future(write_through(io, fs, f"{n}.txt", "x", "toolu"))
        asked = await editor.request()
        io.answer(ClientIoResultParams(id=asked["id"], ok=False, message="read-only buffer"))
        _, note = await writing or (None, "")
        assert "the pod wrote the file itself" in note
        assert (workspace / f"{n}.txt").read_text() == "x"
    assert len(alerts) == 1 and "read-only buffer" in alerts[0][2]


async def test_silence_drops_the_offer_and_the_pod_reads_the_disk(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(client_io, "ANSWER_TIMEOUT_S", 0.05)
    io, alerts = _io()
    fs = ScopedFS(workspace)
    (workspace / "a.txt").write_text("on disk\n")
    editor = Line()
    io.offer(editor, True)
    assert await read_through(io, fs, "a.txt", "toolu") is None  # read from disk instead
    assert not io.serving and len(editor.sent) == 1
    [(level, source, message)] = alerts
    assert (level, source) == ("warn", "client_io") and "from now on" in message
    assert await read_through(io, fs, "a.txt", "toolu") is None
    assert len(editor.sent) == 1  # not asked again


async def test_a_cancelled_call_stops_waiting_and_a_late_answer_is_dropped(
    workspace: Path,
) -> None:
    io, _ = _io()
    fs = ScopedFS(workspace)
    editor = Line()
    io.offer(editor, True)
    writing = asyncio.ensure_future(write_through(io, fs, "a.txt", "x", "toolu"))
    asked = await editor.request()
    writing.cancel()  # the turn was paused
    with pytest.raises(asyncio.CancelledError):
        await writing
    assert io.answer(ClientIoResultParams(id=asked["id"], ok=True)) is not None
    assert not (workspace / "a.txt").exists()  # the pod did not write it behind the pause


async def test_a_path_out_of_scope_is_refused_before_the_client_is_asked(
    workspace: Path,
) -> None:
    io, _ = _io()
    fs = ScopedFS(workspace)
    (workspace.parent / "secret.txt").write_text("secret")
    editor = Line()
    io.offer(editor, True)
    assert await read_through(io, fs, "../secret.txt", "toolu") is None
    with pytest.raises(FsError):
        await write_through(io, fs, "../secret.txt", "pwned", "toolu")
    assert editor.sent == []
    assert (workspace.parent / "secret.txt").read_text() == "secret"


async def test_a_fifo_is_never_put_to_the_client(workspace: Path) -> None:
    import os

    io, _ = _io()
    fs = ScopedFS(workspace)
    os.mkfifo(workspace / "pipe")
    editor = Line()
    io.offer(editor, True)
    assert await read_through(io, fs, "pipe", "toolu") is None
    with pytest.raises(FsError, match="not a regular file"):
        await write_through(io, fs, "pipe", "x", "toolu")
    assert editor.sent == []


async def test_a_paused_command_in_the_editor_keeps_what_it_printed(workspace: Path) -> None:
    """A pause cancels the call (and the tool runner cancels it again): the editor is told to
    kill it, and the output it reports then goes into the interrupted result."""
    io, _ = _io()
    editor = Line()
    io.offer(editor, True, terminal=True)
    printed: list[str] = []
    running = asyncio.ensure_future(
        io.run_command(["/bin/true"], workspace, 60, 1000, "toolu", on_interrupt=printed.append)
    )
    asked = await editor.request()
    assert asked["op"] == "run_command"
    running.cancel()
    killed = await editor.request()
    assert (killed["op"], killed["id"]) == ("kill_command", asked["id"])
    running.cancel()  # the runner's second cancel must not end the wait for the answer
    await asyncio.sleep(0)
    assert not running.done()
    answered = ClientIoResultParams(id=asked["id"], ok=True, content="step 1 of 30\n")
    assert io.answer(answered) is None
    with pytest.raises(asyncio.CancelledError):
        await running
    assert printed == ["step 1 of 30\n"]
