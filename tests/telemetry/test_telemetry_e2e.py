"""A served pod with ``[telemetry]`` exports its turn's spans and metrics to a real OTLP/HTTP
collector on localhost, decoded with opentelemetry-proto; a dead collector stalls nothing."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path
from typing import Any

from orchestrator.adapters.telemetry import sdk, shutdown_telemetry
from orchestrator.serving.client import PodClient
from tests.e2e.harness import ScriptedReply, ScriptedToolCall, collect_until, running_pod
from tests.telemetry.receiver import Receiver, Span

PROMPT = "please read the readme, the-secret-prompt-words"
SLOW = ScriptedReply(text="y" * 400, chunk_size=4, chunk_delay_s=0.01)
HOOKS = {"PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "true"}]}]}


def _replies() -> list[ScriptedReply]:
    read = ScriptedToolCall(name="read_file", input={"path": "README.md"}, id="toolu_read")
    # The tool round, a reply the pause cuts short, and the reply Resume gets.
    return [ScriptedReply(tool_calls=[read]), SLOW, ScriptedReply(text="all done")]


async def _turn_with_a_tool_and_a_pause(client: PodClient) -> None:
    await client.send("run", {"input": PROMPT})
    await client.wait_for("text_delta")  # the second request streams: the tool ran
    await client.send("pause")
    events = await collect_until(client, "run_end", timeout=30)
    assert events[-1].data == {"result": "paused"}
    await client.send("resume")
    events = await collect_until(client, "run_end", timeout=30)
    assert events[-1].data == {"result": "finished"}


def _one(receiver: Receiver, name: str, **attributes: Any) -> Span:
    found = [
        s
        for s in receiver.named(name)
        if all(s.attributes.get(k) == v for k, v in attributes.items())
    ]
    assert len(found) == 1, f"{name} {attributes}: {receiver.summary()}"
    return found[0]


async def test_a_turn_with_a_tool_call_and_a_pause_arrives_as_spans_and_metrics(
    workspace: Path, short_dir: Path, receiver: Receiver
) -> None:
    telemetry = {"otlp_endpoint": receiver.url}
    async with running_pod(
        workspace, short_dir, replies=_replies(), telemetry=telemetry, hooks=HOOKS
    ) as pod:
        client = await pod.client()
        await _turn_with_a_tool_and_a_pause(client)
        session = Path((await client.request("get_status")).data["session"]).stem
        await client.close()
    assert shutdown_telemetry(), "the flush at shutdown did not finish within its ceiling"
    receiver.wait_for("both runs of the turn", lambda r: len(r.named("invoke_agent t")) == 2)

    paused = _one(receiver, "invoke_agent t", **{"pod.run.result": "paused"})
    resumed = _one(receiver, "invoke_agent t", **{"pod.run.result": "finished"})
    for run in (paused, resumed):
        assert run.parent_id == ""  # a root: a turn is what a trace is about
        assert run.attributes["gen_ai.operation.name"] == "invoke_agent"
        assert run.attributes["gen_ai.conversation.id"] == session
        assert run.attributes["pod.name"] == "t" and run.attributes["pod.turn"] == 1
    assert paused.attributes["pod.turn.resumed"] is False
    assert paused.attributes["pod.pause.reason"] == "user"
    assert resumed.attributes["pod.turn.resumed"] is True
    assert resumed.attributes["pod.turn.result"] == "finished"
    assert resumed.links == [paused.span_id]  # the resumed run points at the paused one
    # Lifecycle state changes are events of the run they happened in.
    states = [e[1]["pod.state"] for e in paused.events if e[0] == "pod.state"]
    assert states[0] == "requesting" and states[-2:] == ["pausing", "paused"]
    assert "executing_tools" in states

    chats = [s for s in receiver.spans if s.name.startswith("chat ")]
    assert len(chats) == 3
    first, cut, last = sorted(chats, key=lambda s: s.start_ns)
    assert [first.parent_id, cut.parent_id, last.parent_id] == [
        paused.span_id,
        paused.span_id,
        resumed.span_id,
    ]
    assert first.attributes["gen_ai.operation.name"] == "chat"
    assert first.attributes["gen_ai.request.model"] == pod.provider.model
    assert first.attributes["gen_ai.response.model"] == pod.provider.model
    assert first.attributes["gen_ai.response.finish_reasons"] == ["tool_use"]
    assert first.attributes["gen_ai.usage.output_tokens"] > 0
    assert "gen_ai.usage.cache_read.input_tokens" in first.attributes
    assert cut.attributes["error.type"] == "cancelled" and cut.status_code == 2
    assert last.attributes["gen_ai.response.finish_reasons"] == ["end_turn"]

    tool = _one(receiver, "execute_tool read_file")
    assert tool.parent_id == paused.span_id
    assert tool.attributes["gen_ai.tool.call.id"] == "toolu_read"
    assert tool.attributes["gen_ai.operation.name"] == "execute_tool"
    assert first.end_ns <= tool.start_ns <= tool.end_ns <= cut.start_ns
    hook = _one(receiver, "hook PreToolUse")
    assert hook.parent_id == paused.span_id
    assert hook.attributes["pod.hook.outcome"] == "ok"
    assert hook.attributes["gen_ai.tool.call.id"] == "toolu_read"

    # No content without log_content: not the prompt, not the file, not the hook's command.
    said = repr([(s.attributes, s.events) for s in receiver.spans])
    assert "the-secret-prompt-words" not in said and "A tiny project" not in said
    assert "pod.hook.command" not in said and "gen_ai.tool.call.arguments" not in said

    receiver.wait_for("the metrics", lambda r: any(p.metric == "pod.pauses" for p in r.points))
    by_metric: dict[str, list[Any]] = {}
    for point in receiver.points:
        by_metric.setdefault(point.metric, []).append(point)
    requests = by_metric["gen_ai.client.operation.duration"]
    assert sum(p.count for p in requests) == 3
    assert {p.attributes.get("error.type") for p in requests} == {None, "cancelled"}
    [tool_time] = by_metric["pod.tool.duration"]
    assert tool_time.attributes["gen_ai.tool.name"] == "read_file" and tool_time.count == 1
    [pauses] = by_metric["pod.pauses"]
    assert pauses.value == 1 and pauses.attributes["pod.pause.reason"] == "user"
    stays = {p.attributes["pod.state"] for p in by_metric["pod.state.duration"]}
    assert {"requesting", "executing_tools", "paused"} <= stays
    kinds = {p.attributes["pod.token.kind"] for p in by_metric["pod.tokens"]}
    assert {"input", "output"} <= kinds
    assert {p.attributes["gen_ai.token.type"] for p in by_metric["gen_ai.client.token.usage"]} == {
        "input",
        "output",
    }


async def test_log_content_puts_the_prompt_and_the_tool_output_in_spans(
    workspace: Path, short_dir: Path, receiver: Receiver
) -> None:
    telemetry = {"otlp_endpoint": receiver.url, "log_content": True}
    async with running_pod(workspace, short_dir, replies=_replies(), telemetry=telemetry) as pod:
        client = await pod.client()
        await _turn_with_a_tool_and_a_pause(client)
        await client.close()
    assert shutdown_telemetry()
    receiver.wait_for("the tool's span", lambda r: bool(r.named("execute_tool read_file")))
    paused = _one(receiver, "invoke_agent t", **{"pod.run.result": "paused"})
    [said] = [e[1]["content"] for e in paused.events if e[0] == "gen_ai.user.message"]
    assert said == PROMPT
    tool = _one(receiver, "execute_tool read_file")
    assert '"README.md"' in tool.attributes["gen_ai.tool.call.arguments"]
    assert "A tiny project" in tool.attributes["gen_ai.tool.call.result"]


def _dead_endpoint() -> str:
    """A localhost port nothing listens on (bound, then closed)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


async def test_a_dead_collector_stalls_no_turn_and_raises_one_alert(
    workspace: Path, short_dir: Path
) -> None:
    replies = [*_replies(), ScriptedReply(text="second"), ScriptedReply(text="third")]
    telemetry = {"otlp_endpoint": _dead_endpoint()}
    async with running_pod(workspace, short_dir, replies=replies, telemetry=telemetry) as pod:
        client, watcher = await pod.client(), await pod.client()
        await _turn_with_a_tool_and_a_pause(client)
        process = sdk._current
        assert process is not None
        # The turn's spans are refused (each batch after the exporter's own retries) while
        # the pod goes on; more turns run as if nothing were wrong, more batches are refused.
        await _until_dropped(process, 1)
        await _turn(client, "again")
        await _until_dropped(process, 2)
        await _turn(client, "once more")  # by its end, every refusal's alert was scheduled
        seen = await collect_until(watcher, "run_end", timeout=30, result="finished")
        while sum(e.event == "run_end" for e in seen) < 4:
            seen += await collect_until(watcher, "run_end", timeout=30)
        await client.close()
        await watcher.close()
    alerts = [e.data for e in seen if e.event == "alert" and e.data["source"] == "telemetry"]
    assert len(alerts) == 1, alerts
    assert alerts[0]["level"] == "warn" and "did not take a batch" in alerts[0]["message"]
    assert process.health.failing and process.health.dropped >= 2


async def _turn(client: PodClient, prompt: str) -> None:
    await client.send("run", {"input": prompt})
    events = await collect_until(client, "run_end", timeout=30)
    assert events[-1].data == {"result": "finished"}


async def _until_dropped(process: sdk.ProcessTelemetry, batches: int) -> None:
    """Until the collector has refused ``batches`` batches (a ceiling of a minute; each
    export gives up within seconds)."""
    for _ in range(600):
        if process.health.dropped >= batches:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"only {process.health.dropped} batches were refused")
