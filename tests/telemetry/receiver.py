"""An OTLP/HTTP collector in the test's process: a real HTTP server on localhost that decodes
what the pod's exporters send with opentelemetry-proto, and lets a test wait for it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

CEILING_S = 60.0
"""How long a wait for telemetry may take before the test fails (a generous ceiling)."""


def value_of(value: AnyValue) -> Any:
    """A protobuf attribute value as Python."""
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [value_of(v) for v in value.array_value.values]
    return getattr(value, kind) if kind else None


def attributes(pairs: Any) -> dict[str, Any]:
    """Protobuf key-values as a dict."""
    return {kv.key: value_of(kv.value) for kv in pairs if isinstance(kv, KeyValue)}


@dataclass
class Span:
    """One received span, decoded."""

    name: str
    trace_id: str
    span_id: str
    parent_id: str
    kind: int
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]]
    links: list[str]
    status_code: int
    start_ns: int
    end_ns: int


@dataclass
class Point:
    """One received metric data point, decoded."""

    metric: str
    unit: str
    attributes: dict[str, Any]
    value: float
    """A sum's value, or a histogram's sum."""
    count: int
    """A histogram's count (1 for a sum)."""


@dataclass
class Receiver:
    """What the collector received, and a way to wait for more."""

    url: str = ""
    spans: list[Span] = field(default_factory=list)
    points: list[Point] = field(default_factory=list)
    """The latest data points of each metric."""
    requests: int = 0
    _changed: threading.Condition = field(default_factory=threading.Condition)

    def take_traces(self, body: bytes) -> None:
        request = ExportTraceServiceRequest.FromString(body)
        spans = [
            Span(
                name=s.name,
                trace_id=s.trace_id.hex(),
                span_id=s.span_id.hex(),
                parent_id=s.parent_span_id.hex(),
                kind=s.kind,
                attributes=attributes(s.attributes),
                events=[(e.name, attributes(e.attributes)) for e in s.events],
                links=[link.span_id.hex() for link in s.links],
                status_code=s.status.code,
                start_ns=s.start_time_unix_nano,
                end_ns=s.end_time_unix_nano,
            )
            for resource in request.resource_spans
            for scope in resource.scope_spans
            for s in scope.spans
        ]
        with self._changed:
            self.spans += spans
            self.requests += 1
            self._changed.notify_all()

    def take_metrics(self, body: bytes) -> None:
        request = ExportMetricsServiceRequest.FromString(body)
        points: list[Point] = []
        for resource in request.resource_metrics:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    kind = metric.WhichOneof("data")
                    for p in getattr(metric, kind).data_points:
                        if kind == "histogram":
                            value, count = p.sum, p.count
                        else:
                            value = p.as_double if p.HasField("as_double") else p.as_int
                            count = 1
                        points.append(
                            Point(metric.name, metric.unit, attributes(p.attributes), value, count)
                        )
        with self._changed:
            # Cumulative temporality: each export holds the totals so far, so the latest
            # export of a metric replaces what an earlier one said.
            names = {p.metric for p in points}
            self.points = [p for p in self.points if p.metric not in names] + points
            self.requests += 1
            self._changed.notify_all()

    def wait_for(self, what: str, ready: Callable[[Receiver], bool]) -> None:
        """Until ``ready`` holds (checked at each arrival), within :data:`CEILING_S`."""
        deadline = time.monotonic() + CEILING_S
        with self._changed:
            while not ready(self):
                left = deadline - time.monotonic()
                assert left > 0, f"the collector never received {what}: {self.summary()}"
                self._changed.wait(left)

    def named(self, name: str) -> list[Span]:
        """The spans called ``name``, in arrival order."""
        return [s for s in self.spans if s.name == name]

    def summary(self) -> str:
        return f"spans {[s.name for s in self.spans]}, metrics {sorted({p.metric for p in self.points})}"


class _Handler(BaseHTTPRequestHandler):
    receiver: Receiver

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.path == "/v1/traces":
            self.receiver.take_traces(body)
            reply = ExportTraceServiceResponse().SerializeToString()
        elif self.path == "/v1/metrics":
            self.receiver.take_metrics(body)
            reply = ExportMetricsServiceResponse().SerializeToString()
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: the test reads what arrived, not the access log


@contextmanager
def otlp_receiver() -> Iterator[Receiver]:
    """A collector on a free localhost port for the block."""
    receiver = Receiver()
    handler = type("Handler", (_Handler,), {"receiver": receiver})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
