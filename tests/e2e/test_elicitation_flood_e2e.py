"""A server that floods the pod with requests for input: one waits for a person, the others are
declined at once, the pod keeps answering, and the next turn runs. The server is
``tests/mcp/raw_server.py`` speaking protocol 2025-11-25, where a server may send requests of its
own on stdio whenever it likes."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

from orchestrator.adapters.providers.scripted import ScriptedReply, ScriptedToolCall
from tests.e2e.harness import collect_until, running_pod
from tests.mcp.raw_server import config as raw_config

FLOOD = 300


async def _lines(path: Path, count: int, within_s: float = 180.0) -> list[str]:
    """The file's lines once it has ``count`` of them (the server writes one per answer)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        lines = path.read_text().splitlines() if path.exists() else []
        if len(lines) >= count:
            return lines
        await asyncio.sleep(0.1)
    raise AssertionError(f"{path} has {len(lines)} answers, not {count}, after {within_s} s")


async def test_a_flood_of_requests_for_input_keeps_one_waiting_and_declines_the_rest(
    workspace: Path, short_dir: Path, tmp_path: Path
) -> None:
    answers = tmp_path / "answers"
    replies = [
        ScriptedReply(
            tool_calls=[
                ScriptedToolCall(
                    name="mcp__h__ask_many", input={"count": FLOOD, "path": str(answers)}
                )
            ]
        ),
        ScriptedReply(text="done"),
        ScriptedReply(text="next turn"),
    ]
    async with running_pod(
        workspace,
        short_dir,
        replies=replies,
        mcp={"servers": {"h": raw_config(RAW_PROTOCOL="2025-11-25")}},
    ) as pod:
        c = await pod.client()
        await c.send("run", {"input": "flood"})
        events = await collect_until(c, "elicitation_request", timeout=120)
        asked = events[-1].data
        # Every other request was answered (declined) while the first waits.
        declined = await _lines(answers, FLOOD - 1)
        other = await pod.client()
        started = time.monotonic()
        status = await other.request("get_status")
        status_s = time.monotonic() - started
        await other.close()
        await c.send(
            "answer_elicitation",
            {"id": asked["id"], "action": "accept", "content": {"answer": "x"}},
        )
        events += await collect_until(c, "run_end", timeout=120)
        await c.send("run", {"input": "again"})
        after = await collect_until(c, "run_end", timeout=120)
        await c.close()
    assert all(line.endswith(" decline") for line in declined), declined
    assert [e.data["id"] for e in events if e.event == "elicitation_request"] == [asked["id"]]
    assert [e["id"] for e in status.data["elicitations"]] == [asked["id"]]
    assert status_s < 30, f"get_status took {status_s:.1f} s during the flood"
    [result] = [e.data for e in events if e.event == "tool_result"]
    tally = json.loads(result["content"] or result["summary"])
    busy = (
        "decline: another request of this server waits for a person's answer, and a server "
        "asks one thing at a time; ask again once it is answered"
    )
    assert tally == {"accept: ": 1, busy: FLOOD - 1}
    # Said to the clients once, not once per declined request.
    said = [e for e in events if e.event == "alert" and "one thing at a time" in str(e.data)]
    assert len(said) == 1
    assert events[-1].data == {"result": "finished"}
    assert after[-1].data == {"result": "finished"}
