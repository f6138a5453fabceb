"""One pod's recorder on the SDK's in-memory exporter and reader: what it makes of the pod's
events, its machine (the real lifecycle, on a recording model) and its seams."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from orchestrator.adapters.providers.base import ProviderRequest
from orchestrator.adapters.providers.scripted import ScriptedProvider, ScriptedReply
from orchestrator.adapters.session.records import HookRecord, HookRunRecord
from orchestrator.adapters.telemetry import (
    PodTelemetry,
    TracedProvider,
    sdk,
    shutdown_telemetry,
    start_telemetry,
)
from orchestrator.adapters.telemetry.metrics import PodMetrics
from orchestrator.protocol import RunEndData, StatusData, ToolResultData, TurnStartData
from states import PodLifecycle
from states.table import EVENT_ARGUMENTS, RecordingModel


@dataclass
class Rig:
    recorder: PodTelemetry
    spans: InMemorySpanExporter
    reader: InMemoryMetricReader

    def finished(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.spans.get_finished_spans() if s.name == name]

    def points(self, metric: str) -> list[Any]:
        data = self.reader.get_metrics_data()
        assert data is not None
        return [
            point
            for resource in data.resource_metrics
            for scope in resource.scope_metrics
            for m in scope.metrics
            if m.name == metric
            for point in m.data.data_points
        ]


@pytest.fixture
def rig() -> Iterator[Rig]:
    spans = InMemorySpanExporter()
    tracing = TracerProvider()
    tracing.add_span_processor(SimpleSpanProcessor(spans))
    reader = InMemoryMetricReader()
    meters = MeterProvider(metric_readers=[reader])
    recorder = PodTelemetry(
        tracer=tracing.get_tracer("test"),
        metrics=PodMetrics.make(meters.get_meter("test")),
        pod_name="p",
        session_id="s1",
        provider_name="scripted",
        cost=lambda model, usage: 0.25 if model == "priced" else None,
    )
    yield Rig(recorder, spans, reader)
    tracing.shutdown()
    meters.shutdown()


def _status(**fields: Any) -> dict[str, Any]:
    # A status as a dict: what a pod with budgets says (pause_reason) before StatusData has it.
    return {"status": "paused", **fields}


def test_a_budget_pause_counts_as_a_budget_stop(rig: Rig) -> None:
    r = rig.recorder
    r.observe("turn_start", TurnStartData(turn=3))
    r.observe("status", _status(pause_reason="budget"))
    r.observe("run_end", RunEndData(result="paused"))
    [pauses] = rig.points("pod.pauses")
    assert (pauses.value, pauses.attributes["pod.pause.reason"]) == (1, "budget")
    [stops] = rig.points("pod.budget.stops")
    assert stops.value == 1
    [turn] = rig.finished("invoke_agent p")
    assert turn.attributes is not None and turn.attributes["pod.pause.reason"] == "budget"
    # A pause by anything else is a pause, not a budget stop.
    r.observe("turn_start", TurnStartData(turn=3, resumed=True))
    r.observe("status", _status())
    r.observe("run_end", RunEndData(result="paused"))
    assert {p.attributes["pod.pause.reason"]: p.value for p in rig.points("pod.pauses")} == {
        "budget": 1,
        "unspecified": 1,
    }
    assert rig.points("pod.budget.stops")[0].value == 1
    # A status model without the field (today's) reads as no reason.
    r.observe("status", StatusData.model_construct(status="paused"))
    assert r._pause_reason is None


async def test_a_compaction_between_turns_is_a_span_and_its_request_a_child(rig: Rig) -> None:
    r = rig.recorder
    machine = PodLifecycle(model=RecordingModel(), start_value="idle")
    machine.add_listener(r)
    machine.send("compact")
    provider = TracedProvider(ScriptedProvider(replies=[ScriptedReply(text="the summary")]), r)
    hello = [{"role": "user", "content": "summarise"}]
    request = ProviderRequest(model="priced", system="", messages=hello, max_tokens=100)
    events = [event async for event in provider.stream(request)]
    assert events  # the inner provider's stream passed through
    r.observe(
        "compaction",
        {"trigger": "manual", "tokens_before": 900, "tokens_after": 100, "kept_rounds": 2},
    )
    machine.send("compaction_done")
    [compaction] = rig.finished("compaction")
    [chat] = rig.finished("chat priced")
    assert compaction.parent is None
    assert chat.parent is not None and chat.parent.span_id == compaction.context.span_id
    assert compaction.attributes is not None
    assert compaction.attributes["pod.compaction.tokens_after"] == 100
    states = [e.attributes["pod.state"] for e in compaction.events if e.attributes]
    assert states == ["compacting"]  # idle, where it went next, is after the span's end
    assert [e.attributes["pod.event"] for e in compaction.events if e.attributes] == ["compact"]
    [cost] = rig.points("pod.cost")
    assert cost.value == 0.25 and cost.attributes["gen_ai.response.model"] == "priced"
    stays = {p.attributes["pod.state"] for p in rig.points("pod.state.duration")}
    assert stays == {"compacting"}


def test_a_hook_span_takes_its_times_from_the_record(rig: Rig) -> None:
    r = rig.recorder
    r.observe("turn_start", TurnStartData(turn=1))
    r.tool_started("toolu_1", "bash")
    record = HookRecord(
        event="PostToolUse",
        call_id="toolu_1",
        runs=[HookRunRecord(command="./check.sh --token s3cret", outcome="timeout", ms=1500)],
        at_ms=1_700_000_000_000,
    )
    r.hook_recorded(record)
    [hook] = rig.finished("hook PostToolUse")
    [tool] = [s for s in r._tools.values()]
    assert hook.parent is not None and hook.parent.span_id == tool.span.get_span_context().span_id
    assert (hook.start_time, hook.end_time) == (
        1_700_000_000_000 * 10**6 - 1500 * 10**6,
        1_700_000_000_000 * 10**6,
    )
    assert hook.status.status_code is StatusCode.ERROR
    assert hook.attributes is not None and "pod.hook.command" not in hook.attributes


def test_a_call_still_running_when_its_run_ends_is_ended_as_interrupted(rig: Rig) -> None:
    r = rig.recorder
    r.observe("turn_start", TurnStartData(turn=1))
    r.tool_started("toolu_task", "task")
    r.observe("run_end", RunEndData(result="paused"))
    [tool] = rig.finished("execute_tool task")
    assert tool.attributes is not None and tool.attributes["pod.tool.interrupted"] is True
    [duration] = rig.points("pod.tool.duration")
    assert duration.attributes["error.type"] == "interrupted"
    # Its result, committed by a later run, finds no span to end twice.
    r.observe(
        "tool_result", ToolResultData(id="toolu_task", summary="done", content=None, is_error=False)
    )
    assert len(rig.finished("execute_tool task")) == 1


def test_malformed_events_never_reach_the_pod(rig: Rig) -> None:
    r = rig.recorder
    r.observe("turn_start", {"turn": "not a number"})
    r.observe("run_end", object())  # type: ignore[arg-type]
    r.on_enter_state(object())
    r.hook_recorded(object())  # type: ignore[arg-type]
    r.close()


def test_a_collector_that_never_answers_holds_a_shutdown_only_to_its_ceiling(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Listening, never accepting: a connection is made and no answer ever comes (the
    # exporter waits for its own timeout, longer than the ceiling).
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "30")
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        process = start_telemetry(f"http://127.0.0.1:{silent.getsockname()[1]}")
        process.tracer.start_span("one span to send").end()
        assert shutdown_telemetry(ceiling_s=0.5) is False
    assert sdk._current is None  # a later pod starts afresh


def test_a_rewind_is_a_root_span_with_what_it_dropped(rig: Rig) -> None:
    r = rig.recorder
    machine = PodLifecycle(model=RecordingModel(turn_is_open=True), start_value="paused")
    machine.add_listener(r)
    machine.send("rewind", **EVENT_ARGUMENTS["rewind"])
    assert r.task is not None
    r.observe("rewound", {"to": 1, "restore": "conversation", "prompt": "secret", "dropped": 7})
    machine.send("rewind_done")
    [rewind] = rig.finished("rewind")
    assert rewind.parent is None and rewind.attributes is not None
    assert rewind.attributes["pod.rewind.dropped"] == 7
    assert "secret" not in repr(rewind.attributes)  # the rewound prompt is content
    assert r.task is None


def test_a_task_call_names_its_child_pod_and_its_session(rig: Rig) -> None:
    r = rig.recorder
    r.observe("turn_start", TurnStartData(turn=1))
    r.tool_started("toolu_t", "task")
    child = {
        "call_id": "toolu_t",
        "name": "p-child-1",
        "state": "requesting",
        "session": "/state/sessions/ws/20260101-abc.jsonl",
        "socket": "/run/p-child-1.sock",
        "tail": "what the child printed: content",
    }
    r.observe("child", child)
    r.observe("child", {**child, "call_id": "toolu_other"})  # no such call running: ignored
    r.observe(
        "tool_result", ToolResultData(id="toolu_t", summary="ok", content=None, is_error=False)
    )
    [task] = rig.finished("execute_tool task")
    assert task.attributes is not None
    assert task.attributes["pod.child.session.id"] == "20260101-abc"
    assert task.attributes["pod.child.name"] == "p-child-1"
    assert "content" not in repr(task.attributes)
