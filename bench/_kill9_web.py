"""``bench.kill9 --web``: the API's own tools in the kill -9 benchmark.

The scripted replies draw web search and fetch the way the API runs them (the scripted
provider produces the blocks, stand-in encrypted fields included, and refuses a request whose
encrypted fields came back changed, as the API does): a server loop that stops with
``pause_turn`` (the pod continues it at once; sometimes paused before its last call ran),
searches and fetches with results or an error before cited text, and beside bash calls a server
call left open (the mixed case: its result opens the next reply). A kill point of its own,
``mid_server_loop``, kills the pod right after a server call is announced, inside the loop:
the first turn always kills there, and each process's first reply is a paused server loop, so
every run has at least one kill inside a loop.

The counts come from the final session: the server calls and results it keeps, and the texts
that cite. A ``--web`` run in which no server block survived measured nothing, and says so.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

from orchestrator.core.history import (
    AssistantMessage,
    Item,
    ServerToolResultBlock,
    ServerToolUseBlock,
    TextBlock,
)

__all__ = ["add_server_tools", "count_server_blocks"]


def _call(rng: random.Random, call_id: str, result: str) -> dict[str, Any]:
    name = rng.choice(["web_search", "web_search", "web_fetch"])
    given: dict[str, Any] = {"query": f"kill9 {rng.randrange(10**4)}"}
    if name == "web_fetch":
        given = {"url": f"https://example.com/{rng.randrange(100)}"}
    return {"name": name, "input": given, "id": call_id, "result": result}


def add_server_tools(
    reply: dict[str, Any], rng: random.Random, prefix: str, *, pause: bool = False
) -> dict[str, Any]:
    """``reply`` (a scripted reply's JSON) with the server tools drawn in; ids start with
    ``srvtoolu_`` + ``prefix`` (unique across the pod's processes). ``pause``: a server loop
    that stops with ``pause_turn``, whatever the draw."""
    roll = 0.0 if pause else rng.random()
    if roll < 0.3:
        calls = [_call(rng, f"srvtoolu_{prefix}_0", rng.choice(["results", "error"]))]
        if rng.random() < 0.3:
            calls.append(_call(rng, f"srvtoolu_{prefix}_1", "none"))  # paused before it ran
        out = {k: v for k, v in reply.items() if k != "tool_calls"}
        return out | {"server_calls": calls, "stop_reason": "pause_turn"}
    if roll < 0.7:
        calls = [_call(rng, f"srvtoolu_{prefix}_0", rng.choice(["results", "results", "error"]))]
        if reply.get("tool_calls") and rng.random() < 0.5:
            calls.append(_call(rng, f"srvtoolu_{prefix}_1", "none"))  # the mixed case
        cited = {"url": "https://example.com/", "title": "Example", "cited_text": "a line"}
        return reply | {"server_calls": calls, "citations": [cited]}
    return reply


def count_server_blocks(items: list[Item]) -> dict[str, int]:
    """The server calls, their results and the cited texts the session keeps."""
    counts: Counter[str] = Counter()
    for item in items:
        if not isinstance(item, AssistantMessage):
            continue
        for block in item.blocks:
            if isinstance(block, ServerToolUseBlock):
                counts["server_calls"] += 1
            elif isinstance(block, ServerToolResultBlock):
                counts["server_results"] += 1
            elif isinstance(block, TextBlock) and block.citations:
                counts["cited_texts"] += 1
    return {k: counts[k] for k in ("server_calls", "server_results", "cited_texts")}
