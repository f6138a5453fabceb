"""A full disk: records are written whole or not at all, nothing unsaved is announced, the turn
ends ``errored`` with an alert, and the pod carries on once space is free."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.adapters.session import SessionWriteError, SessionWriter, load_session
from orchestrator.core.history import History, UserMessage
from tests.e2e.harness import ScriptedReply, ScriptedToolCall, collect_until, running_pod
from tests.faults.small_disk import small_disk


def _lines_parse(path: Path) -> list[dict[str, object]]:
    raw = path.read_bytes()
    assert raw.endswith(b"\n"), "the session file ends in a torn line"
    return [json.loads(line) for line in raw.splitlines()]


def test_writer_never_leaves_a_torn_line(tmp_path: Path) -> None:
    with small_disk(tmp_path / "disk", size="64k") as disk:
        path = disk.root / "s.jsonl"
        writer = SessionWriter(path, pod="p", workspace=tmp_path)
        history = History()
        history.new_turn()
        disk.fill()
        big = UserMessage(text="x" * 10_000)  # past the page the header sits in
        with pytest.raises(SessionWriteError, match="No space left"):
            writer.append_item(history.append(big))
        assert len(_lines_parse(path)) == 1  # only the header
        disk.free()
        writer.append_item(history.append(UserMessage(text="after")))
        writer.close()
        assert [i.text for i in load_session(path).items] == ["after"]  # type: ignore[union-attr]


async def test_full_disk_ends_the_turn_errored_and_the_pod_recovers(
    workspace: Path, short_dir: Path, tmp_path: Path
) -> None:
    read = ScriptedReply(
        tool_calls=[ScriptedToolCall(name="read_file", input={"path": "README.md"})]
    )
    with small_disk(tmp_path / "disk", size="128k") as disk:
        session = disk.root / "s.jsonl"
        replies = [read, ScriptedReply(text="done"), ScriptedReply(text="again")]
        async with running_pod(workspace, short_dir, replies=replies, session=session) as pod:
            c = await pod.client()
            disk.fill()
            await c.send("run", {"input": "read the readme " + "please " * 1000})
            events = await collect_until(c, "run_end", timeout=10)
            assert events[-1].data["result"] == "errored"
            errors = [e.data for e in events if e.event == "error"]
            assert [e["code"] for e in errors] == ["session_write"]
            alerts = [e.data for e in events if e.event == "alert"]
            assert any("No space left" in a["message"] for a in alerts)
            status = await c.request("get_status")
            assert status.data["status"] == "idle"
            # Nothing that is not on disk was announced or is in the history reply.
            announced = [e.data["seq"] for e in events if e.data.get("seq") is not None]
            on_disk = [r["item"]["seq"] for r in _lines_parse(session) if r["type"] == "item"]
            assert set(announced) <= set(on_disk)
            history = (await c.request("get_history")).data["items"]
            assert [i["seq"] for i in history] == on_disk
            assert not pod.provider.requests  # no request about an unsaved history

            disk.free()
            await c.send("run", {"input": "try again"})
            events = await collect_until(c, "run_end", timeout=10)
            assert events[-1].data["result"] == "finished"
            assert any(e.event == "alert" and e.data["level"] == "info" for e in events)
            history = (await c.request("get_history")).data["items"]
            texts = [i.get("text") for i in history if i["kind"] == "user_message"]
            assert texts[0].startswith("read the readme") and texts[-1] == "try again"
            pod.assert_all_requests_valid()
            await c.close()
        loaded = load_session(session)
        assert not loaded.warnings
        assert [i.seq for i in loaded.items] == [i["seq"] for i in history]
