"""``bench.kill9 --web`` in miniature: SIGKILLs inside server loops (pause_turn, the mixed
case, cited text), then restart and continue: 0 invalid requests, 0 lost, 0 ran twice."""

from __future__ import annotations

import random

import pytest

from bench._kill9_web import add_server_tools, count_server_blocks
from orchestrator.core.history import (
    AssistantMessage,
    ServerToolResultBlock,
    ServerToolUseBlock,
    TextBlock,
)
from tests.faults.test_kill9_smoke import kill9


@pytest.mark.slow
@pytest.mark.parametrize("thinking", [False, True])
def test_kill9_with_server_tools(thinking: bool) -> None:
    result = kill9("--turns", "8", "--seed", "5", "--web", *(["--thinking"] if thinking else []))
    assert result["turns"] == 8 and result["kills"] >= 1, result
    assert result["invalid_requests"] == 0, result
    assert result["lost"] == 0, result
    assert result["executed_twice"] == 0, result
    assert result["wrong_status"] == 0, result
    assert result["problems"] == [], result
    # The server loops happened and their blocks survived every restart.
    web = result["web"]
    assert web["server_calls"] > 0 and web["server_results"] == web["server_calls"], result
    # The first turn is killed inside a server loop (its first reply pauses one).
    assert result["kill_points"].get("mid_server_loop", 0) >= 1, result


def test_the_web_replies_draw_every_server_case() -> None:
    rng = random.Random(1)
    bash = {"text": "t", "tool_calls": [{"name": "bash", "id": "toolu_1", "input": {}}]}
    drawn = [add_server_tools(dict(bash), rng, f"p{n}") for n in range(200)]
    paused = [r for r in drawn if r.get("stop_reason") == "pause_turn"]
    mixed = [r for r in drawn if r.get("tool_calls") and len(r.get("server_calls", [])) == 2]
    assert paused and mixed
    # A paused loop never calls client tools; an open call is only ever last in a pause or
    # beside client calls (else the history would hold a call the API never answers).
    assert all("tool_calls" not in r for r in paused)
    for reply in drawn:
        opened = [c for c in reply.get("server_calls", []) if c["result"] == "none"]
        if opened:
            assert reply.get("stop_reason") == "pause_turn" or reply.get("tool_calls")
    ids = [c["id"] for r in drawn for c in r.get("server_calls", [])]
    assert len(ids) == len(set(ids)) and all(i.startswith("srvtoolu_") for i in ids)


def test_count_server_blocks_reads_what_the_session_keeps() -> None:
    call = ServerToolUseBlock(id="srvtoolu_1", name="web_search", input={"query": "q"})
    result = ServerToolResultBlock(
        type="web_search_tool_result", tool_use_id="srvtoolu_1", content=[]
    )
    cited = TextBlock(text="x", citations=[{"type": "web_search_result_location"}])
    items = [AssistantMessage(blocks=[call, result, cited, TextBlock(text="plain")])]
    assert count_server_blocks(items) == {"server_calls": 1, "server_results": 1, "cited_texts": 1}
