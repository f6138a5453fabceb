"""MCP tool servers: pod start with servers, the cost of a call, pause during a call.

A pod is served in this process on a real socket with the scripted provider; the MCP servers
are real stdio processes (a small server written with the ``mcp`` package into the scratch
folder, or ``mcp-server-time`` from PyPI):

* start: time to ready with 3 stdio servers (``mcp-server-time``) and with none; the
  difference is what the servers cost.
* call: one reply of 20 calls of the server's ``echo`` (returning 4 KiB) against 20 calls of
  the built-in ``read_file`` on a 4 KiB file; per call, from ``run`` to ``run_end``.
* pause: a call of ``hang`` (never answers); after 30-60 ms the client pauses and times the
  ``run_end: paused``. Target: p99 under 100 ms.

    python -m bench.mcp [--quick]
"""

from __future__ import annotations

import asyncio
import random
import sys
import time
from pathlib import Path
from typing import Any

from bench._common import Result, bench_config, latency_stats, main_for, row, scratch_workspace

NAME = "mcp"

SERVER = '''
import threading
from mcp.server.mcpserver import MCPServer

server = MCPServer("bench")


@server.tool()
def echo(size: int = 4096) -> str:
    """Text of the given size."""
    return ("x" * 63 + "\\n") * (size // 64)


@server.tool()
def hang() -> str:
    """Never answers."""
    threading.Event().wait()
    return ""


server.run("stdio")
'''


def _stdio(*args: str) -> dict[str, Any]:
    return {"command": sys.executable, "args": list(args), "permission": "allow"}


async def _ready_time(root: Path, servers: dict[str, Any], n: int) -> list[float]:
    from bench._common import served_pod
    from orchestrator.adapters.providers.scripted import ScriptedProvider

    out: list[float] = []
    for i in range(n):
        config = bench_config(
            root, session=root / f"start{i}-{len(servers)}.jsonl", mcp={"servers": servers}
        )
        started = time.perf_counter()
        async with served_pod(config, ScriptedProvider(), root / "s.sock"):
            out.append(time.perf_counter() - started)
    return out


async def _turn_time(root: Path, tool: str, arguments: dict[str, Any], calls: int) -> float:
    """Seconds per call of one turn that makes ``calls`` calls of ``tool``."""
    from bench._common import served_pod
    from orchestrator.adapters.providers.scripted import (
        ScriptedProvider,
        ScriptedReply,
        ScriptedToolCall,
    )
    from orchestrator.serving.client import PodClient

    reply = ScriptedReply(
        tool_calls=[ScriptedToolCall(name=tool, input=arguments) for _ in range(calls)]
    )
    provider = ScriptedProvider(replies=[reply, ScriptedReply(text="done")])
    servers = {"b": _stdio(str(root / "server.py"))}
    config = bench_config(
        root,
        session=root / f"{tool}.jsonl",
        mcp={"servers": servers},
        permissions={"mode": "yolo"},
    )
    socket = root / "t.sock"
    async with served_pod(config, provider, socket):
        client = await PodClient.connect(socket)
        started = time.perf_counter()
        await client.send("run", {"input": "go"})
        await client.wait_for("run_end", timeout=120)
        elapsed = time.perf_counter() - started
        await client.close()
    return elapsed / calls


async def _pause_times(root: Path, samples: int) -> list[float]:
    from bench._common import served_pod
    from orchestrator.adapters.providers.scripted import (
        ScriptedProvider,
        ScriptedReply,
        ScriptedToolCall,
    )
    from orchestrator.serving.client import PodClient

    hang = ScriptedReply(tool_calls=[ScriptedToolCall(name="mcp__b__hang", input={})])
    provider = ScriptedProvider(replies=[hang] * (samples + 1))
    config = bench_config(
        root,
        session=root / "pause.jsonl",
        mcp={"servers": {"b": _stdio(str(root / "server.py"))}},
        permissions={"mode": "yolo"},
    )
    socket = root / "p.sock"
    out: list[float] = []
    rng = random.Random(7)
    async with served_pod(config, provider, socket):
        client = await PodClient.connect(socket)
        await client.send("run", {"input": "hang"})
        for _ in range(samples):
            await client.wait_for("tool_call_done", timeout=30)
            await asyncio.sleep(rng.uniform(0.03, 0.06))
            started = time.perf_counter()
            await client.send("pause")
            await client.wait_for("run_end", timeout=30)
            out.append(time.perf_counter() - started)
            await client.send("run", {"input": "again"})  # closes the paused turn, calls again
        await client.close()
    return out


def run(quick: bool) -> Result:
    """Measure the three figures; see the module docstring."""
    starts = 2 if quick else 5
    calls = 5 if quick else 20
    samples = 10 if quick else 40
    with scratch_workspace("pm") as root:
        (root / "server.py").write_text(SERVER)
        (root / "ws" / "page.txt").write_text(("x" * 63 + "\n") * 64)
        time_server = _stdio("-m", "mcp_server_time")
        three = {f"t{i}": time_server for i in range(3)}

        async def measure() -> dict[str, Any]:
            none = await _ready_time(root, {}, starts)
            with_three = await _ready_time(root, three, starts)
            mcp_call = await _turn_time(root, "mcp__b__echo", {"size": 4096}, calls)
            builtin = await _turn_time(root, "read_file", {"path": "page.txt"}, calls)
            pauses = await _pause_times(root, samples)
            return {"none": none, "three": with_three, "mcp": mcp_call, "builtin": builtin,
                    "pauses": pauses}  # fmt: skip

        got = asyncio.run(measure())
    start_none = latency_stats(got["none"])["median_ms"]
    start_three = latency_stats(got["three"])["median_ms"]
    pause = latency_stats(got["pauses"])
    return {
        "benchmark": NAME,
        "quick": quick,
        "results": {
            "start_no_servers_ms": start_none,
            "start_three_servers_ms": start_three,
            "server_share_ms": start_three - start_none,
            "mcp_call_ms": got["mcp"] * 1000,
            "builtin_call_ms": got["builtin"] * 1000,
            "pause_during_mcp_call": pause,
        },
        "table": [
            row("pod ready, no MCP servers (median)", start_none, "ms"),
            row("pod ready, 3 stdio servers (median)", start_three, "ms"),
            row("of which the servers", start_three - start_none, "ms"),
            row("MCP call, 4 KiB result, per call", got["mcp"] * 1000, "ms"),
            row("built-in read_file, 4 KiB, per call", got["builtin"] * 1000, "ms"),
            row(
                "pause during an MCP call, p99",
                pause["p99_ms"],
                "ms",
                target="< 100",
                met=pause["p99_ms"] < 100,
            ),
        ],
    }


def main() -> None:
    """Print the JSON result."""
    main_for(run, __doc__ or NAME)


if __name__ == "__main__":
    main()
