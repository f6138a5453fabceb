"""100,000 notes to a paused pod: bounded memory, a clear error, a small session."""

from __future__ import annotations

import json
from pathlib import Path

from orchestrator.core.notes import MAX_NOTES
from tests.e2e.harness import ScriptedReply, collect_until, running_pod

SLOW = ScriptedReply(text="z" * 200, chunk_size=4, chunk_delay_s=0.01)


async def test_a_note_flood_while_paused_is_bounded(
    workspace: Path, short_dir: Path, tmp_path: Path
) -> None:
    session = tmp_path / "s.jsonl"
    async with running_pod(
        workspace, short_dir, replies=[SLOW, ScriptedReply(text="ok")], session=session
    ) as pod:
        c = await pod.client()
        await c.send("run", {"input": "go"})
        await c.wait_for("text_delta")
        await c.send("pause")
        await c.wait_for("run_end", result="paused")
        flood = b"".join(
            json.dumps({"method": "notify", "params": {"message": f"build {n}"}}).encode() + b"\n"
            for n in range(MAX_NOTES + 50)
        )
        same = b"".join(
            json.dumps({"method": "notify", "params": {"message": "tick"}}).encode() + b"\n"
            for _ in range(10_000)
        )
        await c.send_raw(flood + same)
        status = await c.request("get_status", timeout=30)
        assert status.data["status"] == "paused"
        errors = []
        while True:
            event = await c.next_event(timeout=5)
            assert event is not None
            if event.event == "error":
                errors.append(event.data)
            if len(errors) == 50 + 10_000:
                break
        assert {e["code"] for e in errors} == {"queue_full"}
        assert "are already waiting for the next round boundary" in errors[0]["message"]
        await c.send("resume")
        await collect_until(c, "run_end", result="finished")
        history = (await c.request("get_history")).data["items"]
        notes = [i["text"] for i in history if i["kind"] == "system_message"]
        assert len(notes) == MAX_NOTES
        assert notes[0] == "[Notification] build 0"
        await c.close()
    assert session.stat().st_size < 100_000
