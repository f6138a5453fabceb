"""What the model still knows after a compaction, over the real socket: the request that
follows a mid-turn ``compact`` holds the turn's user request, the open todos and the last
tool rounds verbatim (docs/context.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.e2e.harness import ScriptedReply, ScriptedToolCall, collect_until, running_pod
from tests.e2e.test_todos_e2e import todo_call

PROMPT = 'Port the parser to the new API — keep parse()\'s signature, and "quote" this: ✓'


def read(path: str, call_id: str) -> ScriptedToolCall:
    return ScriptedToolCall(name="read_file", input={"path": path}, id=call_id)


def blocks_of(messages: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [
        b
        for m in messages
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == kind
    ]


async def test_after_a_mid_turn_compact_the_request_holds_the_prompt_todos_and_rounds(
    workspace: Path, short_dir: Path
) -> None:
    for k in range(4):
        (workspace / f"big{k}.txt").write_text(f"file {k}\n" + f"line of {k}\n" * 900)
    plan = (("survey", "completed"), ("port parse", "in_progress"), ("run tests", "pending"))
    replies = [
        ScriptedReply(text="warm up " + "long " * 400, chunk_size=500),
        ScriptedReply(text="planning", tool_calls=[todo_call(*plan, call_id="toolu_todo")]),
        ScriptedReply(text="round one", tool_calls=[read("big0.txt", "toolu_r1")]),
        ScriptedReply(text="round two", tool_calls=[read("big1.txt", "toolu_r2")]),
        ScriptedReply(text="round three", tool_calls=[read("big2.txt", "toolu_r3")]),
        # Streams slowly: the compact asked meanwhile happens at the boundary after it.
        ScriptedReply(
            text="round four " + "w" * 200,
            tool_calls=[read("big3.txt", "toolu_r4")],
            chunk_size=4,
            chunk_delay_s=0.01,
        ),
        ScriptedReply(text="ported"),
    ]
    async with running_pod(workspace, short_dir, replies=replies, compact_keep_tokens=500) as pod:
        c = await pod.client()
        await c.send("run", {"input": "warm up"})
        await collect_until(c, "run_end")
        await c.send("run", {"input": PROMPT})
        for _ in range(4):  # the todo write and three reads have their results
            await c.wait_for("tool_result", timeout=30)
        await c.send("compact")
        events = await collect_until(c, "run_end", timeout=60)
        [compaction] = [e.data for e in events if e.event == "compaction"]
        # Each round reads ~2,500 tokens, over compact_keep_tokens: the two are kept anyway.
        assert compaction["kept_rounds"] == 2 and compaction["kept_request"] is True
        assert compaction["todos"] == 2
        assert events[-1].data == {"result": "finished"}

        summary_at = next(
            i for i, r in enumerate(pod.provider.requests) if r.purpose == "compaction"
        )
        after = [r for r in pod.provider.requests[summary_at:] if r.purpose != "compaction"]
        assert after
        messages = after[0].messages
        head = messages[0]["content"][0]["text"]
        assert head.startswith("[Conversation summary")
        # The prompt lies before the kept rounds, so it is carried, verbatim, after the summary.
        assert f"[The latest user request, verbatim]\n{PROMPT}" in head
        assert "[>] port parse (Doing port parse)\n[ ] run tests" in head
        # The last two rounds, whole: each call with its text and its result, as sent before.
        before = [r for r in pod.provider.requests[:summary_at] if r.purpose != "compaction"]
        round_three = [m for m in before[-1].messages if "toolu_r3" in json.dumps(m)]
        assert len(round_three) == 2  # the call's message and its result's
        kept = [m for m in messages if "toolu_r3" in json.dumps(m) or "toolu_r4" in json.dumps(m)]
        assert kept[:2] == round_three
        assert kept[2]["content"][0] == {"type": "text", "text": "round four " + "w" * 200}
        [result] = [b for b in blocks_of(kept[3:], "tool_result") if b["tool_use_id"] == "toolu_r4"]
        assert "line of 3" in json.dumps(result)
        assert "round one" not in json.dumps(messages[1:])  # summarised: over the budget
        assert "round two" not in json.dumps(messages[1:])
        pod.assert_all_requests_valid()
        await c.close()
