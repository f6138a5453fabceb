"""A server that breaks the protocol ends the call it broke, with a result that says what it
sent, and is started afresh for the next; one that floods stdout costs a few log lines."""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import Any

import pytest

from orchestrator.adapters.mcp.server import McpServer, McpServerError
from orchestrator.adapters.mcp.wire_watch import NOISE_LOGGED_FIRST
from orchestrator.config.mcp import McpServerConfig
from tests.e2e.harness import ScriptedReply, ScriptedToolCall, collect_until, running_pod
from tests.mcp.raw_server import config

TIMEOUT_S = 5.0


def call(tool: str, **arguments: Any) -> ScriptedReply:
    return ScriptedReply(tool_calls=[ScriptedToolCall(name=f"mcp__r__{tool}", input=arguments)])


async def run_turn(
    workspace: Path, short_dir: Path, replies: list[ScriptedReply], **server: Any
) -> tuple[list[dict[str, Any]], list[str], list[float]]:
    """One turn against the raw server: its tool results, alerts, and when each result came.
    Every server process it started is gone once the pod is."""
    pidfile = workspace.parent / "raw-pids"
    entry = config(RAW_PIDFILE=str(pidfile)) | {"timeout_s": TIMEOUT_S} | server
    async with running_pod(
        workspace, short_dir, replies=replies, mcp={"servers": {"r": entry}}
    ) as pod:
        c = await pod.client()
        started = time.monotonic()
        await c.send("run", {"input": "go"})
        results: list[dict[str, Any]] = []
        alerts: list[str] = []
        times: list[float] = []

        async def read() -> None:
            async for event in c.events():
                if event.event == "tool_result":
                    results.append(event.data)
                    times.append(time.monotonic() - started)
                elif event.event == "alert":
                    alerts.append(event.data["message"])
                elif event.event == "run_end":
                    assert event.data == {"result": "finished"}
                    return

        await asyncio.wait_for(read(), 120)
        await c.close()
    started_pids = [int(pid) for pid in pidfile.read_text().split()]
    assert started_pids and not [pid for pid in started_pids if alive(pid)]
    return results, alerts, times


def alive(pid: int) -> bool:
    """Running, not gone or a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.parametrize(
    ("tool", "said"),
    [
        ("wrong_id", "answered with a response for another request (id 987654"),
        ("null_id", "answered with a response for no request (a null id): it went wrong"),
        ("not_jsonrpc", 'sent a line that is not JSON-RPC: {"status": "ok", "answer": 42}'),
    ],
)
async def test_a_broken_answer_ends_the_call_and_the_server_is_restarted(
    workspace: Path, short_dir: Path, tool: str, said: str
) -> None:
    replies = [call(tool), call("echo", text="back again"), ScriptedReply(text="done")]
    results, alerts, times = await run_turn(workspace, short_dir, replies)
    broken, echo = results
    assert broken["is_error"]
    assert f"MCP server r: {tool} failed: the server {said}" in broken["summary"]
    assert times[0] < TIMEOUT_S + 1  # the bar; before, the call never ended
    assert not echo["is_error"] and echo["content"] == "back again"
    assert any(
        a.startswith(f"MCP server r failed: it broke the protocol: it {said}") for a in alerts
    )
    assert "MCP server r restarted (1 of 3 restarts after it stopped)" in alerts


async def test_fifty_megabytes_of_stdout_noise_cost_a_few_log_lines(
    workspace: Path, short_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    replies = [call("noise", megabytes=50), call("echo", text="hi"), ScriptedReply(text="done")]
    with caplog.at_level(logging.WARNING):
        results, alerts, _ = await run_turn(workspace, short_dir, replies)
    noise, echo = results
    assert not noise["is_error"] and noise["content"] == "done"
    assert not echo["is_error"] and echo["content"] == "hi"
    assert [a for a in alerts if "non-protocol output on stdout" in a] == [
        "MCP server r writes non-protocol output on stdout; the pod drops it (its first lines "
        "are in the pod's log, a count in the server's stderr); a server's own messages "
        "belong on stderr"
    ]
    assert not any("restarted" in a or "failed" in a for a in alerts)
    logged = [r.getMessage() for r in caplog.records if "MCP server r" in r.getMessage()]
    assert len(logged) == NOISE_LOGGED_FIRST
    assert sum(len(r.getMessage()) for r in caplog.records) < 10_000


async def test_a_call_past_call_timeout_s_ends_and_its_late_answer_is_no_breach(
    workspace: Path, short_dir: Path
) -> None:
    replies = [call("late", seconds=1), call("echo", text="next"), ScriptedReply(text="done")]
    entry = config() | {"call_timeout_s": 0.5, "cancel_grace_s": 5}
    async with running_pod(
        workspace, short_dir, replies=replies, mcp={"servers": {"r": entry}}
    ) as pod:
        c = await pod.client()
        await c.send("run", {"input": "go"})
        events = await collect_until(c, "run_end", timeout=60)
        late, echo = [e.data for e in events if e.event == "tool_result"]
        assert late["is_error"]
        assert "MCP server r: late did not answer within 0.5 s (call_timeout_s)" in late["summary"]
        assert echo["content"] == "next"  # the server serves on meanwhile
        # The given-up call's answer arrives about now: late, not a breach.
        await asyncio.sleep(1.5)
        [server] = (await c.status()).mcp
        assert (server.status, server.restarts) == ("running", 0)
        assert not [e for e in events if e.event == "alert"]
        await c.close()


async def test_a_server_that_breaks_the_protocol_at_start_fails_at_once(
    workspace: Path,
) -> None:
    alerts: list[tuple[str, str]] = []
    server = McpServer(
        name="r",
        config=McpServerConfig(**config(RAW_BREAK_INIT="1")),
        workspace=workspace,
        alert=lambda level, message: alerts.append((level, message)),
    )
    started = time.monotonic()
    with pytest.raises(McpServerError) as failed:
        await server.start()
    assert "MCP server r failed: it answered with a response for another request" in str(
        failed.value
    )
    assert time.monotonic() - started < TIMEOUT_S  # not the default 30 s start timeout
    assert server.status.startswith("failed: it answered")
    await server.close()
