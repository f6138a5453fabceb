"""The editor's files through ACP: an editor (the SDK's client side) that declares
``fs.readTextFile`` and ``fs.writeTextFile`` gets the pod's file tools to read its buffers
(unsaved text included) and to write through it, with real files on disk; the pod's scope
still decides, the disk is checked after each write, and an editor that fails or lies is
worked around (the pod writes the file itself and says so)."""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError, schema

from tests.acp.client import RecordingClient, acp_agent, acp_env

FILES = schema.ClientCapabilities(
    fs=schema.FileSystemCapabilities(read_text_file=True, write_text_file=True)
)


@pytest.fixture
def env(short_dir: Path, tmp_path: Path) -> dict[str, str]:
    return acp_env(dict(os.environ), short_dir, tmp_path / "state")


@dataclass
class Editor(RecordingClient):
    """An editor with open buffers: reads give the buffer (else the disk), writes save to
    disk unless told to misbehave."""

    buffers: dict[str, str] = field(default_factory=dict)
    reads: list[str] = field(default_factory=list)
    writes: list[tuple[str, str]] = field(default_factory=list)
    behaviour: str = "save"
    """``save``, ``refuse`` (a JSON-RPC error) or ``buffer-only`` (says done, never saves)."""

    async def read_text_file(
        self, path: str, session_id: str, limit: int | None = None, line: int | None = None,
        **kwargs: Any,
    ) -> schema.ReadTextFileResponse:  # fmt: skip
        self.reads.append(path)
        text = self.buffers.get(path)
        if text is None:
            text = Path(path).read_text()
        return schema.ReadTextFileResponse(content=text)

    async def write_text_file(
        self, content: str, path: str, session_id: str, **kwargs: Any
    ) -> schema.WriteTextFileResponse | None:
        self.writes.append((path, content))
        if self.behaviour == "refuse":
            raise RequestError.internal_error({"message": "the buffer is read-only"})
        self.buffers[path] = content
        if self.behaviour == "save":
            Path(path).write_text(content)
        return schema.WriteTextFileResponse()


def _script(tmp_path: Path, *calls: dict[str, Any]) -> tuple[str, ...]:
    script = tmp_path / "script.json"
    replies = [{"tool_calls": [call]} for call in calls] + [{"text": "done"}]
    script.write_text(json.dumps({"replies": replies}))
    return ("--provider", "scripted", "--script", str(script), "--permission-mode", "accept-edits")


def _results(editor: Editor) -> list[str]:
    """Each finished call's text, in order."""
    return [
        "".join(part.content.text for part in u.content if part.type == "content")
        for u in editor.of("tool_call_update")
        if u.status in ("completed", "failed") and u.content
    ]


def _text(text: str) -> schema.TextContentBlock:
    return schema.TextContentBlock(type="text", text=text)


async def test_reads_see_the_unsaved_buffer_and_edits_land_in_the_editor(
    env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    notes = workspace / "notes.txt"
    notes.write_text("saved text\n")
    editor = Editor(buffers={str(notes.resolve()): "unsaved text\n"})
    args = _script(
        tmp_path,
        {"name": "read_file", "input": {"path": "notes.txt"}},
        {"name": "edit_file", "input": {"path": "notes.txt", "old_string": "unsaved", "new_string": "edited"}},
        {"name": "write_file", "input": {"path": "sub/new.txt", "content": "hello\n"}},
    )  # fmt: skip
    async with acp_agent(env, *args, client=editor, capabilities=FILES) as (conn, _, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        done = await conn.prompt(session_id=session.session_id, prompt=[_text("go")])
        assert done.stop_reason == "end_turn"
    read, edit, write = _results(editor)
    assert "unsaved text" in read and "saved text" not in read.replace("unsaved text", "")
    assert "replaced 1 occurrence" in edit and "the pod wrote" not in edit
    assert "write_file: sub/new.txt" in write and "the pod wrote" not in write
    # The editor was handed the paths the scope resolved, and the disk holds the edits.
    assert editor.writes == [
        (str(notes.resolve()), "edited text\n"),
        (str((workspace / "sub" / "new.txt").resolve()), "hello\n"),
    ]
    assert notes.read_text() == "edited text\n"
    assert (workspace / "sub" / "new.txt").read_text() == "hello\n"


@pytest.mark.parametrize(("behaviour", "said"), [
    ("refuse", "the editor did not write it"),
    ("buffer-only", "the editor did not save it to disk"),
])  # fmt: skip
async def test_a_write_the_editor_did_not_make_is_made_by_the_pod_and_said(
    env: dict[str, str], workspace: Path, tmp_path: Path, behaviour: str, said: str
) -> None:
    editor = Editor(behaviour=behaviour)
    args = _script(tmp_path, {"name": "write_file", "input": {"path": "a.txt", "content": "A\n"}})
    async with acp_agent(env, *args, client=editor, capabilities=FILES) as (conn, _, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        done = await conn.prompt(session_id=session.session_id, prompt=[_text("go")])
        assert done.stop_reason == "end_turn"
    [write] = _results(editor)
    assert f"({said}; the pod wrote the file itself)" in write
    assert (workspace / "a.txt").read_text() == "A\n"
    assert len(editor.writes) == 1


async def test_the_pods_scope_decides_before_the_editor_is_asked(
    env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    outside = workspace.parent / "outside.txt"
    outside.write_text("secret\n")
    editor = Editor()
    args = _script(
        tmp_path,
        {"name": "read_file", "input": {"path": str(outside)}},
        {"name": "write_file", "input": {"path": "../outside.txt", "content": "pwned\n"}},
    )
    async with acp_agent(env, *args, client=editor, capabilities=FILES) as (conn, _, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=[_text("go")])
    assert editor.reads == [] and editor.writes == []
    assert outside.read_text() == "secret\n"
    assert all("secret" not in result for result in _results(editor))


async def test_an_editor_without_the_capability_is_never_asked(
    env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    editor = Editor()
    args = _script(tmp_path, {"name": "write_file", "input": {"path": "b.txt", "content": "B\n"}})
    async with acp_agent(env, *args, client=editor) as (conn, _, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=[_text("go")])
    assert editor.writes == [] and (workspace / "b.txt").read_text() == "B\n"


@dataclass
class SlowEditor(Editor):
    """An editor that holds each write until the test lets it go."""

    holding: asyncio.Event = field(default_factory=asyncio.Event)
    go: asyncio.Event = field(default_factory=asyncio.Event)
    wrote: asyncio.Event = field(default_factory=asyncio.Event)

    async def write_text_file(
        self, content: str, path: str, session_id: str, **kwargs: Any
    ) -> schema.WriteTextFileResponse | None:
        self.holding.set()
        await self.go.wait()
        try:
            return await super().write_text_file(content, path, session_id, **kwargs)
        finally:
            self.wrote.set()


async def test_a_pause_while_the_editor_writes_keeps_the_turn_whole_and_writes_once(
    env: dict[str, str], workspace: Path, tmp_path: Path
) -> None:
    editor = SlowEditor()
    args = _script(tmp_path, {"name": "write_file", "input": {"path": "a.txt", "content": "A\n"}})
    async with acp_agent(env, *args, client=editor, capabilities=FILES) as (conn, _, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        sid = session.session_id
        running = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[_text("go")]))
        await asyncio.wait_for(editor.holding.wait(), 30)
        await conn.cancel(session_id=sid)  # the pod's pause
        assert (await asyncio.wait_for(running, 30)).stop_reason == "cancelled"
        editor.go.set()  # the editor writes after all; its answer comes too late
        await asyncio.wait_for(editor.wrote.wait(), 30)
        done = await conn.prompt(session_id=sid, prompt=[_text("go on")])
        assert done.stop_reason == "end_turn"
    assert len(editor.writes) == 1  # the interrupted write was not made again
    [interrupted] = _results(editor)
    assert "Interrupted" in interrupted or "interrupted" in interrupted
