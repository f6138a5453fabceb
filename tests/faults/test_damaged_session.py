"""A session file damaged in the middle: the pod repairs it on load, says what it changed,
and every later request is wire-valid."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.harness import ScriptedReply, ScriptedToolCall, collect_until, running_pod


async def _make_session(workspace: Path, short_dir: Path, session: Path) -> None:
    calls = [ScriptedToolCall(name="read_file", input={"path": "README.md"}) for _ in range(2)]
    replies = [
        ScriptedReply(tool_calls=calls),
        ScriptedReply(text="read both"),
        ScriptedReply(text="ok"),
    ]
    async with running_pod(workspace, short_dir, replies=replies, session=session) as pod:
        c = await pod.client()
        for text in ("read it twice", "thanks"):
            await c.send("run", {"input": text})
            await collect_until(c, "run_end")
        await c.close()


def _corrupt_tool_use_id(record: dict[str, object]) -> bool:
    item = record.get("item")
    if isinstance(item, dict) and item.get("kind") == "assistant":
        for block in item["blocks"]:
            if block["type"] == "tool_use":
                block["id"] = "toolu corrupted!"
                return True
    return False


def _drop_a_result(record: dict[str, object]) -> bool:
    item = record.get("item")
    return isinstance(item, dict) and item.get("kind") == "tool_result"


@pytest.mark.parametrize("damage", ["corrupt_id", "drop_result", "garble_line", "swap_lines"])
async def test_a_damaged_session_is_repaired_on_load(
    workspace: Path, short_dir: Path, tmp_path: Path, damage: str
) -> None:
    session = tmp_path / "s.jsonl"
    await _make_session(workspace, short_dir, session)
    lines = session.read_bytes().splitlines()
    for n, line in enumerate(lines[1:], start=1):
        record = json.loads(line)
        if damage == "corrupt_id" and _corrupt_tool_use_id(record):
            lines[n] = json.dumps(record).encode()
            break
        if damage in ("drop_result", "garble_line") and _drop_a_result(record):
            lines[n] = b"" if damage == "drop_result" else line[: len(line) // 2]
            break
        if damage == "swap_lines" and _drop_a_result(record):
            lines[n], lines[n - 1] = lines[n - 1], lines[n]
            break
    session.write_bytes(b"\n".join(x for x in lines if x) + b"\n")

    async with running_pod(
        workspace,
        short_dir,
        replies=[ScriptedReply(text="still here")],
        session=session,
        continue_=True,
    ) as pod:
        c = await pod.client()
        history = (await c.request("get_history")).data
        assert history["alerts"], "the repair must be reported"
        assert all(a["level"] == "warn" and a["source"] == "pod" for a in history["alerts"])
        await c.send("run", {"input": "are you there?"})
        events = await collect_until(c, "run_end")
        assert events[-1].data["result"] == "finished"
        pod.assert_all_requests_valid()
        await c.close()
