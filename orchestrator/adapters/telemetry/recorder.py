"""One pod's spans, and the metrics they feed: a listener on what the pod already says.

Fed by what the pod has anyway: the events it broadcasts (:meth:`PodTelemetry.observe`, the
transcript's tap), its lifecycle machine (a listener: :meth:`PodTelemetry.on_enter_state`),
and two seams where no event exists: a tool call starting to run
(:meth:`PodTelemetry.tool_started`) and a hook event's runs being recorded
(:meth:`PodTelemetry.hook_recorded`). Model requests are traced by
:class:`~orchestrator.adapters.telemetry.provider.TracedProvider`, under
:attr:`PodTelemetry.current`.

Telemetry must never cost the pod anything but time: every entry point swallows (and logs)
its own failures. Nothing of the conversation's text reaches a span unless ``log_content``.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Link, Span, SpanContext, SpanKind, Status, StatusCode, Tracer
from pydantic import BaseModel

from orchestrator.adapters.session.records import HookRecord
from orchestrator.adapters.telemetry.attributes import Attributes, usage_attributes
from orchestrator.adapters.telemetry.attributes import field_of as _get
from orchestrator.adapters.telemetry.metrics import PodMetrics
from orchestrator.core.usage import TokenUsage
from states.queries import AT_REST, COMPACTING, REWINDING

__all__ = ["PodTelemetry"]

log = logging.getLogger(__name__)

_PENDING_MAX = 16
"""State changes kept for the next span when none is open (a turn's first state is entered
before its ``turn_start``)."""


@dataclass
class _Tool:
    span: Span
    name: str
    started: float


@dataclass(eq=False)
class PodTelemetry:
    """Spans and metrics of one pod, from its events, its machine and two small seams."""

    tracer: Tracer
    metrics: PodMetrics
    pod_name: str
    session_id: str
    provider_name: str
    log_content: bool = False
    cost: Callable[[str, TokenUsage], float | None] = lambda model, usage: None
    """Dollars a request cost on ``model`` (None: the model has no price)."""
    turn: Span | None = None
    """The open turn's span (one per run of it: a resumed turn gets a new one, linked)."""
    task: Span | None = None
    """The open compaction's or rewind's span."""
    _last_turn: tuple[int, SpanContext] | None = None
    _turn_number: int = 0
    _run_usage: TokenUsage = field(default_factory=TokenUsage)
    _tools: dict[str, _Tool] = field(default_factory=dict)
    _calls: dict[str, tuple[str, Any]] = field(default_factory=dict)
    """Each call the model made, until its result: its tool's name and arguments."""
    _pending: list[tuple[str, Attributes, int]] = field(default_factory=list)
    _state: tuple[str, float] | None = None
    _pause_reason: str | None = None

    # -- where spans hang ------------------------------------------------------------------

    @property
    def labels(self) -> Attributes:
        """What every span of this pod carries."""
        return {"pod.name": self.pod_name, "pod.session.id": self.session_id}

    @property
    def current(self) -> Span | None:
        """Where a model request's span hangs: the compaction or rewind running, else the
        turn (None: a root span)."""
        return self.task or self.turn

    def start_span(
        self,
        name: str,
        attributes: Attributes,
        *,
        parent: Span | None,
        kind: SpanKind = SpanKind.INTERNAL,
        start_time: int | None = None,
        links: list[Link] | None = None,
    ) -> Span:
        """A span of this pod's (its labels added) under ``parent`` (None: a root span)."""
        context = trace.set_span_in_context(parent) if parent is not None else Context()
        return self.tracer.start_span(
            name,
            context=context,
            kind=kind,
            attributes={**self.labels, **attributes},
            start_time=start_time,
            links=links,
        )

    # -- the pod's events --------------------------------------------------------------------

    def observe(self, event: str, data: BaseModel | Mapping[str, Any]) -> None:
        """One event the pod broadcast (the transcript's tap)."""
        handler = _HANDLERS.get(event)
        if handler is None:
            return
        try:
            handler(self, data)
        except Exception:  # telemetry never breaks a broadcast
            log.warning("telemetry could not record a %s event", event, exc_info=True)

    def _turn_start(self, data: Any) -> None:
        self._end_turn("superseded")  # a turn span left open by a lost run_end
        turn, resumed = int(_get(data, "turn")), bool(_get(data, "resumed"))
        links = []
        if resumed and self._last_turn is not None and self._last_turn[0] == turn:
            links.append(Link(self._last_turn[1], {"pod.link": "resumed"}))
        self._turn_number, self._run_usage = turn, TokenUsage()
        self.turn = self.start_span(
            f"invoke_agent {self.pod_name}",
            {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": self.pod_name,
                "gen_ai.conversation.id": self.session_id,
                "gen_ai.provider.name": self.provider_name,
                "pod.turn": turn,
                "pod.turn.resumed": resumed,
            },
            parent=None,
            links=links,
        )
        self._flush_pending(self.turn)

    def _user_message(self, data: Any) -> None:
        if self.log_content and self.turn is not None:
            segments = _get(data, "segments") or []
            text = "".join(str(_get(segment, "text") or "") for segment in segments)
            self.turn.add_event("gen_ai.user.message", {"content": text})

    def _tool_call_done(self, data: Any) -> None:
        self._calls[str(_get(data, "id"))] = (str(_get(data, "name")), _get(data, "arguments"))

    def _tool_result(self, data: Any) -> None:
        call_id = str(_get(data, "id"))
        # The call's own event may be announced after the call started (it waits for the
        # disk; a read-only call does not), so its arguments are read at its end.
        _, arguments = self._calls.pop(call_id, ("", None))
        tool = self._tools.pop(call_id, None)
        if tool is None:
            return  # never ran: denied, or closed as interrupted before it started
        if self.log_content and arguments is not None:
            tool.span.set_attribute(
                "gen_ai.tool.call.arguments", json.dumps(arguments, default=str)
            )
        is_error = bool(_get(data, "is_error"))
        if is_error:
            tool.span.set_attribute("error.type", "tool_error")
            tool.span.set_status(Status(StatusCode.ERROR))
        if self.log_content:
            content = _get(data, "content")
            result = str(_get(data, "summary")) + (f"\n{content}" if content else "")
            tool.span.set_attribute("gen_ai.tool.call.result", result)
        self._tool_done(tool, "tool_error" if is_error else None)

    def _tool_done(self, tool: _Tool, error: str | None) -> None:
        attributes: Attributes = {"pod.name": self.pod_name, "gen_ai.tool.name": tool.name}
        if error is not None:
            attributes["error.type"] = error
        self.metrics.tool_duration.record(time.monotonic() - tool.started, attributes)
        tool.span.end()

    def _child(self, data: Any) -> None:
        # A task call's child pod traces itself (its own pod, its own session): its name and
        # session id on the call's span find its traces (gen_ai.conversation.id).
        tool = self._tools.get(str(_get(data, "call_id")))
        session = _get(data, "session")
        if tool is not None and session:
            tool.span.set_attributes(
                {
                    "pod.child.name": str(_get(data, "name")),
                    "pod.child.session.id": PurePath(str(session)).stem,
                }
            )

    def _compaction(self, data: Any) -> None:
        if self.task is not None:
            self.task.set_attributes(
                {
                    "pod.compaction.trigger": str(_get(data, "trigger")),
                    "pod.compaction.tokens_before": int(_get(data, "tokens_before") or 0),
                    "pod.compaction.tokens_after": int(_get(data, "tokens_after") or 0),
                    "pod.compaction.kept_rounds": int(_get(data, "kept_rounds") or 0),
                }
            )

    def _rewound(self, data: Any) -> None:
        if self.task is not None:
            self.task.set_attributes(
                {
                    "pod.rewind.to": int(_get(data, "to") or 0),
                    "pod.rewind.restore": str(_get(data, "restore")),
                    "pod.rewind.dropped": int(_get(data, "dropped") or 0),
                }
            )

    def _status(self, data: Any) -> None:
        # Budgets say why a turn paused here (``pause_reason``); older pods say nothing.
        reason = _get(data, "pause_reason")
        self._pause_reason = str(reason) if reason else None

    def _turn_end(self, data: Any) -> None:
        if self.turn is not None:
            self.turn.set_attribute("pod.turn.result", str(_get(data, "result")))

    def _run_end(self, data: Any) -> None:
        result = str(_get(data, "result"))
        if result == "paused":
            reason = self._pause_reason or "unspecified"
            labels: Attributes = {"pod.name": self.pod_name, "pod.pause.reason": reason}
            self.metrics.pauses.add(1, labels)
            if reason == "budget":
                self.metrics.budget_stops.add(1, {"pod.name": self.pod_name})
            if self.turn is not None:
                self.turn.set_attribute("pod.pause.reason", reason)
        self._end_turn(result)

    def _end_turn(self, result: str) -> None:
        for call_id in list(self._tools):
            # Still running when the run ended (a resumable call Resume continues): its end
            # is not known here, only that this run stopped waiting for it.
            tool = self._tools.pop(call_id)
            tool.span.set_attribute("pod.tool.interrupted", True)
            self._tool_done(tool, "interrupted")
        turn, self.turn = self.turn, None
        if turn is None:
            return
        turn.set_attributes({"pod.run.result": result, **usage_attributes(self._run_usage)})
        if result == "errored":
            turn.set_attribute("error.type", "turn_failed")
            turn.set_status(Status(StatusCode.ERROR))
        self._last_turn = (self._turn_number, turn.get_span_context())
        turn.end()

    # -- the machine ---------------------------------------------------------------------------

    def on_enter_state(self, state: Any, event: Any = None) -> None:
        """A machine listener: each state entered is a span event, its stay a metric."""
        try:
            self._entered(state, event)
        except Exception:
            log.warning("telemetry could not record a state change", exc_info=True)

    def _entered(self, state: Any, event: Any) -> None:
        if not getattr(state, "is_atomic", True):
            return
        name, now = str(state.id), time.monotonic()
        self._left_state(now)
        self._state = (name, now)
        if name in COMPACTING or name in REWINDING:
            if self.task is None:
                kind = "compaction" if name in COMPACTING else "rewind"
                self.task = self.start_span(kind, {"pod.task": kind}, parent=self.turn)
                self._flush_pending(self.task)
        elif self.task is not None:
            task, self.task = self.task, None
            task.end()
        attributes: Attributes = {"pod.state": name, "pod.event": str(event or "")}
        span = self.current
        if span is not None:
            span.add_event("pod.state", attributes)
        elif name not in AT_REST:
            self._pending = [
                *self._pending[-(_PENDING_MAX - 1) :],
                (name, attributes, time.time_ns()),
            ]
        else:
            self._pending.clear()  # at rest: nothing the next span should carry

    def _left_state(self, now: float) -> None:
        if self._state is not None:
            name, since = self._state
            labels: Attributes = {"pod.name": self.pod_name, "pod.state": name}
            self.metrics.state_duration.record(now - since, labels)

    def _flush_pending(self, span: Span) -> None:
        for _, attributes, at in self._pending:
            span.add_event("pod.state", attributes, timestamp=at)
        self._pending.clear()

    # -- the seams -------------------------------------------------------------------------

    def tool_started(self, call_id: str, name: str) -> None:
        """A tool call begins to run (after any approval)."""
        try:
            attributes: Attributes = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": name,
                "gen_ai.tool.call.id": call_id,
                "gen_ai.tool.type": "function",
            }
            span = self.start_span(f"execute_tool {name}", attributes, parent=self.turn)
            self._tools[call_id] = _Tool(span=span, name=name, started=time.monotonic())
        except Exception:
            log.warning("telemetry could not record a tool start", exc_info=True)

    def hook_recorded(self, record: HookRecord) -> None:
        """An event's hook commands ran: a span each, timed by what the record says."""
        try:
            tool = self._tools.get(record.call_id) if record.call_id else None
            parent = tool.span if tool is not None else self.current
            end = record.at_ms * 1_000_000
            for run in record.runs:
                attributes: Attributes = {
                    "pod.hook.event": record.event,
                    "pod.hook.outcome": run.outcome,
                    "pod.hook.decision": record.decision,
                }
                if run.code is not None:
                    attributes["pod.hook.exit_code"] = run.code
                if record.call_id is not None:
                    attributes["gen_ai.tool.call.id"] = record.call_id
                if self.log_content:
                    attributes["pod.hook.command"] = run.command
                start = end - run.ms * 1_000_000
                span = self.start_span(
                    f"hook {record.event}", attributes, parent=parent, start_time=start
                )
                if run.outcome != "ok":
                    span.set_attribute("error.type", run.outcome)
                    span.set_status(Status(StatusCode.ERROR))
                span.end(end_time=end)
        except Exception:
            log.warning("telemetry could not record a hook", exc_info=True)

    def request_done(self, model: str, usage: TokenUsage) -> None:
        """A model request's usage, counted toward the open turn and by model."""
        self._run_usage = self._run_usage + usage
        labels: Attributes = {"pod.name": self.pod_name, "gen_ai.response.model": model}
        kinds = {
            "input": usage.input_tokens,
            "output": usage.output_tokens,
            "cache_read": usage.cache_read_input_tokens,
            "cache_creation": usage.cache_creation_input_tokens,
        }
        for kind, count in kinds.items():
            if count:
                self.metrics.tokens.add(count, {**labels, "pod.token.kind": kind})
        dollars = self.cost(model, usage)
        if dollars:
            self.metrics.cost.add(dollars, labels)

    def close(self) -> None:
        """The pod closes (stopped or unloaded): end every open span."""
        try:
            self._left_state(time.monotonic())
            self._state = None
            if self.task is not None:
                task, self.task = self.task, None
                task.end()
            self._end_turn("closed")
        except Exception:
            log.warning("telemetry could not close its spans", exc_info=True)


_HANDLERS: dict[str, Callable[[PodTelemetry, Any], None]] = {
    "turn_start": PodTelemetry._turn_start,
    "user_message": PodTelemetry._user_message,
    "tool_call_done": PodTelemetry._tool_call_done,
    "tool_result": PodTelemetry._tool_result,
    "child": PodTelemetry._child,
    "compaction": PodTelemetry._compaction,
    "rewound": PodTelemetry._rewound,
    "status": PodTelemetry._status,
    "turn_end": PodTelemetry._turn_end,
    "run_end": PodTelemetry._run_end,
    "shutdown": lambda telemetry, data: telemetry.close(),
}
"""The events telemetry reads; every other one (deltas above all) costs a dict lookup."""
