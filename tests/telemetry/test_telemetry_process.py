"""A ``pod serve`` process told by the standard ``OTEL_EXPORTER_OTLP_ENDPOINT`` variable alone
sends its turn's spans, and its metrics as it exits (the flush at exit)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from orchestrator.serving.client import PodClient
from tests.e2e.harness import collect_until, start_pod_process, what_it_said
from tests.telemetry.receiver import Receiver


async def test_the_standard_variable_turns_it_on_and_the_exit_flushes(
    workspace: Path, short_dir: Path, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
    script = short_dir / "script.json"
    call = {"name": "read_file", "input": {"path": "README.md"}, "id": "toolu_r"}
    script.write_text(json.dumps({"replies": [{"tool_calls": [call]}, {"text": "read it"}]}))
    socket, session = short_dir / "p.sock", short_dir / "session.jsonl"
    proc = start_pod_process(workspace, socket, session, script)
    try:
        client = await PodClient.connect(socket)
        await client.send("run", {"input": "read the readme"})
        events = await collect_until(client, "run_end", timeout=30)
        assert events[-1].data == {"result": "finished"}
        await client.send("shutdown")
        await client.close()
        code = await asyncio.to_thread(proc.wait, 60)
        assert code == 0, what_it_said(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
    # Metrics are exported every hour here (the tests' setting): these came with the exit.
    receiver.wait_for(
        "the exit's metrics", lambda r: any(p.metric == "pod.tokens" for p in r.points)
    )
    receiver.wait_for("the turn", lambda r: bool(r.named("execute_tool read_file")))
    [turn] = [s for s in receiver.spans if s.name.startswith("invoke_agent ")]
    assert turn.attributes["gen_ai.conversation.id"] == session.stem
    [tool] = receiver.named("execute_tool read_file")
    assert tool.parent_id == turn.span_id and tool.trace_id == turn.trace_id
