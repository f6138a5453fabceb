"""Bad input and failures over the socket: clear errors, the pod stays up, nothing is lost."""

from __future__ import annotations

import asyncio
from pathlib import Path

from orchestrator.serving.client import PodEvent
from tests.e2e.harness import ScriptedReply, ScriptedToolCall, collect_until, running_pod


async def test_bad_lines_get_invalid_request(workspace: Path, short_dir: Path) -> None:
    async with running_pod(workspace, short_dir, replies=[ScriptedReply(text="ok")]) as pod:
        c = await pod.client()
        cases = [
            b"\xff\xfe not utf-8\n",
            b"[1, 2, 3]\n",
            b'{"method": "run", "params": {"segments": "nope"}, "id": 7}\n',
            b'{"method": "run", "params": {"input": "   "}, "id": 8}\n',
            b'{"method": "notify", "params": {}, "id": 9}\n',
        ]
        for line in cases:
            await c.send_raw(line)
            err = await c.wait_for("error")
            assert err.data["code"] == "invalid_request", line
        await c.send("run", {"input": "still fine"})
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "finished"}
        await c.close()


async def test_oversized_line_is_refused_and_the_next_line_works(
    workspace: Path, short_dir: Path
) -> None:
    async with running_pod(workspace, short_dir, replies=[ScriptedReply(text="ok")]) as pod:
        c = await pod.client()
        huge = b'{"method": "run", "params": {"input": "' + b"a" * (9 * 1024 * 1024) + b'"}}\n'
        await c.send_raw(huge)
        err = await c.wait_for("error", timeout=20)
        assert err.data["code"] == "invalid_request"
        assert "longer than" in err.data["message"]
        await c.send("get_status", id="s")
        status = await c.wait_for("status", id="s")
        assert status.data["status"] == "idle"
        assert pod.provider.requests == []
        await c.close()


async def test_unknown_segment_becomes_placeholder_and_alert(
    workspace: Path, short_dir: Path
) -> None:
    async with running_pod(workspace, short_dir, replies=[ScriptedReply(text="ok")]) as pod:
        c = await pod.client()
        await c.send(
            "run",
            {
                "segments": [
                    {"kind": "text", "text": "look: "},
                    {"kind": "image", "data": "iVBOR..."},
                ]
            },
        )
        events = await collect_until(c, "run_end")
        alert = next(e.data for e in events if e.event == "alert")
        assert alert["level"] == "warn" and "'image'" in alert["message"]
        text = pod.provider.requests[0].messages[0]["content"][0]["text"]
        assert text == "look: [unsupported segment: image]"
        await c.close()


async def test_provider_error_ends_errored_and_the_session_recovers(
    workspace: Path, short_dir: Path
) -> None:
    calls = ScriptedReply(
        tool_calls=[ScriptedToolCall(name="read_file", input={"path": "README.md"}, id="toolu_1")]
    )
    dropped = ScriptedReply(
        text="partial answer that", error="connection reset", error_after_chunks=1
    )
    replies = [calls, dropped, ScriptedReply(text="recovered")]
    async with running_pod(workspace, short_dir, replies=replies) as pod:
        c = await pod.client()
        await c.send("run", {"input": "go"})
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "errored"}
        assert any(e.event == "error" and e.data["code"] == "provider_error" for e in events)
        assert any(e.event == "alert" and e.data["level"] == "error" for e in events)
        history = (await c.request("get_history")).data["items"]
        # The partial stream was not committed; the finished tool round was.
        assert [i["kind"] for i in history] == ["user_message", "assistant", "tool_result"]
        await c.send("run", {"input": "try again"})
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "finished"}
        pod.assert_all_requests_valid()
        await c.close()


async def test_round_limit(workspace: Path, short_dir: Path) -> None:
    loop = [
        ScriptedReply(tool_calls=[ScriptedToolCall(name="glob", input={"pattern": "*"})])
        for _ in range(3)
    ]
    async with running_pod(workspace, short_dir, replies=loop, max_rounds=2) as pod:
        c = await pod.client()
        await c.send("run", {"input": "loop forever"})
        events = await collect_until(c, "run_end")
        assert events[-1].data == {"result": "limit_reached"}
        assert len(pod.provider.requests) == 2
        await c.close()


async def test_child_reports_upward_but_not_on_pause(workspace: Path, short_dir: Path) -> None:
    parent_dir = short_dir / "p"
    child_dir = short_dir / "c"
    parent_dir.mkdir()
    child_dir.mkdir()
    slow = ScriptedReply(text="y" * 400, chunk_size=4, chunk_delay_s=0.01)
    async with running_pod(
        workspace, parent_dir, replies=[ScriptedReply(text="noted")] * 3
    ) as parent:
        watcher = await parent.client()
        async with running_pod(
            workspace,
            child_dir,
            replies=[ScriptedReply(text="child done"), slow, ScriptedReply(text="x")],
            parent_socket=parent.socket,
        ) as child:
            c = await child.client()
            await c.send("run", {"input": "work"})
            await collect_until(c, "run_end")
            note = await watcher.wait_for("system_note", origin="pod_event")
            assert note.data["text"] == "[Pod event] child pod 't' turn_ended: finished"
            await collect_until(watcher, "run_end")

            await c.send("run", {"input": "long work"})
            await c.wait_for("text_delta")
            await c.send("pause")
            await collect_until(c, "run_end")
            await c.send("shutdown")
            await c.close()
            await asyncio.wait_for(child.task, 10)
        got: list[PodEvent] = await collect_until(watcher, "system_note", origin="pod_event")
        notes = [e.data["text"] for e in got if e.event == "system_note"]
        # A user pause sends nothing upward; the shutdown does.
        assert notes == ["[Pod event] child pod 't' shut_down"]
        await watcher.close()


async def test_start_up_alerts_reach_clients_that_connect_later(
    workspace: Path, short_dir: Path, tmp_path: Path
) -> None:
    from orchestrator.adapters.session import SessionWriter
    from orchestrator.core.history import History, UserMessage

    session = tmp_path / "torn.jsonl"
    writer = SessionWriter(session, pod="t", workspace=workspace)
    history = History()
    history.new_turn()
    writer.append_item(history.append(UserMessage(text="before the crash")))
    writer.close()
    with session.open("ab") as f:
        f.write(b'{"type": "item", "item": {"kind": "assis')  # cut off mid-write
    async with running_pod(
        workspace, short_dir, replies=[ScriptedReply(text="ok")], continue_=True, session=session
    ) as pod:
        for _ in range(2):  # every client, whenever it connects
            c = await pod.client()
            history = (await c.request("get_history")).data
            assert [(a["level"], a["source"], a["message"]) for a in history["alerts"]] == [
                ("warn", "pod", "torn.jsonl:3: torn last line (the pod stopped mid-write) ignored")
            ]
            assert [i["text"] for i in history["items"]] == ["before the crash"]
            assert (await c.request("get_status")).data["status"] == "paused"
            await c.close()
