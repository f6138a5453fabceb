"""The process's OpenTelemetry SDK: one tracer and one meter provider, exporting over OTLP/HTTP.

Built once per process, at the first pod that asks (a host serves many pods; they share it),
and never made the global provider: the pod's telemetry is its own and leaves a library's
alone. Export never waits on the event loop:

* spans go through a :class:`BatchSpanProcessor` with a bounded queue (:data:`MAX_QUEUE`):
  when the collector cannot keep up, the newest spans are dropped, never buffered without end;
* metrics through a :class:`PeriodicExportingMetricReader`, on its own thread;
* a collector that refuses or does not answer costs the batch it was sent, and one alert to
  every pod of the process (:class:`CollectorHealth`): not one per batch. When a batch goes
  through again, one more says so;
* :func:`shutdown_telemetry` flushes what is queued with a ceiling (:data:`FLUSH_CEILING_S`):
  a dead collector delays a pod's exit by at most that much.
"""

from __future__ import annotations

import atexit
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    MetricExporter,
    MetricExportResult,
    MetricsData,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import Tracer

from orchestrator.adapters.telemetry.metrics import PodMetrics

__all__ = [
    "FLUSH_CEILING_S",
    "MAX_QUEUE",
    "SCOPE",
    "CollectorHealth",
    "ProcessTelemetry",
    "shutdown_telemetry",
    "start_telemetry",
]

log = logging.getLogger(__name__)

SCOPE = "pod-orchestrator"
"""The instrumentation scope of every span and metric."""

MAX_QUEUE = 2048
"""Spans waiting for export, at most; past it new spans are dropped."""

FLUSH_CEILING_S = 5.0
"""How long a shutdown waits for the last spans and metrics to reach the collector."""

Sink = Callable[[str, str], bool]
"""(level, message): where a pod is told about the collector (thread-safe); False once the
pod is gone, which forgets the sink."""


@dataclass
class CollectorHealth:
    """Whether the collector takes batches, told once per change to every pod listening."""

    endpoint: str
    failing: bool = False
    dropped: int = 0
    """Batches (spans and metrics) the collector did not take since the process started."""
    _sinks: dict[int, Sink] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def listen(self, sink: Sink) -> Callable[[], None]:
        """Tell ``sink`` of outages from now on; returns the call that stops it."""
        key = id(sink)
        with self._lock:
            self._sinks[key] = sink

        def forget() -> None:
            with self._lock:
                self._sinks.pop(key, None)

        return forget

    def report(self, ok: bool, signal: str) -> None:
        """One export's outcome (on an exporter's thread)."""
        with self._lock:
            if not ok:
                self.dropped += 1
            changed = ok == self.failing
            self.failing = not ok
            sinks = list(self._sinks.values()) if changed else []
        if not sinks:
            return
        where = self.endpoint or "the OTEL_EXPORTER_OTLP_ENDPOINT collector"
        if ok:
            level, message = "info", f"telemetry: {where} takes {signal} again"
        else:
            level, message = (
                "warn",
                f"telemetry: {where} did not take a batch of {signal}; it was dropped, and "
                "so is every batch until the collector answers (the pod goes on; its log has "
                "the reason). Check that the collector runs, or unset [telemetry] "
                "otlp_endpoint.",
            )
        gone = []
        for sink in sinks:
            try:
                if not sink(level, message):
                    gone.append(sink)
            except Exception:  # a pod that is closing must not break export for the others
                log.debug("a telemetry alert could not be delivered", exc_info=True)
        with self._lock:
            for sink in gone:
                self._sinks.pop(id(sink), None)


class _WatchedSpans(SpanExporter):
    """The OTLP span exporter, its outcomes reported to :class:`CollectorHealth`."""

    def __init__(self, inner: SpanExporter, health: CollectorHealth) -> None:
        self.inner = inner
        self.health = health

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            result = self.inner.export(spans)
        except Exception:  # an exporter bug is a dropped batch, never a dead export thread
            log.warning("exporting spans failed", exc_info=True)
            result = SpanExportResult.FAILURE
        self.health.report(result is SpanExportResult.SUCCESS, "spans")
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


class _WatchedMetrics(MetricExporter):
    """The OTLP metric exporter, its outcomes reported to :class:`CollectorHealth`."""

    def __init__(self, inner: MetricExporter, health: CollectorHealth) -> None:
        super().__init__(
            preferred_temporality=inner._preferred_temporality,
            preferred_aggregation=inner._preferred_aggregation,
        )
        self.inner = inner
        self.health = health

    def export(
        self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: object
    ) -> MetricExportResult:
        try:
            result = self.inner.export(metrics_data, timeout_millis=timeout_millis)
        except Exception:
            log.warning("exporting metrics failed", exc_info=True)
            result = MetricExportResult.FAILURE
        self.health.report(result is MetricExportResult.SUCCESS, "metrics")
        return result

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        return self.inner.force_flush(timeout_millis)

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: object) -> None:
        self.inner.shutdown(timeout_millis=timeout_millis)


@dataclass
class ProcessTelemetry:
    """The process's providers and the collector's health."""

    endpoint: str
    """The configured base URL; ``""`` when the ``OTEL_*`` variables name it."""
    tracer_provider: TracerProvider
    meter_provider: MeterProvider
    health: CollectorHealth
    metrics: PodMetrics

    @property
    def tracer(self) -> Tracer:
        """The pod's tracer."""
        return self.tracer_provider.get_tracer(SCOPE)


_lock = threading.Lock()
_current: ProcessTelemetry | None = None


def _signal_url(endpoint: str, path: str) -> str | None:
    """The signal's URL under a configured base, or None to let the exporter read OTEL_*."""
    return f"{endpoint}/{path}" if endpoint else None


def start_telemetry(endpoint: str) -> ProcessTelemetry:
    """The process's telemetry, built at the first call; later calls get the same (a host's
    pods share one configuration: the user's)."""
    global _current
    with _lock:
        if _current is not None:
            return _current
        health = CollectorHealth(endpoint=endpoint)
        resource = Resource.create({"service.name": SCOPE})
        tracer_provider = TracerProvider(resource=resource, shutdown_on_exit=False)
        spans = OTLPSpanExporter(endpoint=_signal_url(endpoint, "v1/traces"))
        tracer_provider.add_span_processor(
            BatchSpanProcessor(_WatchedSpans(spans, health), max_queue_size=MAX_QUEUE)
        )
        metrics = OTLPMetricExporter(endpoint=_signal_url(endpoint, "v1/metrics"))
        reader = PeriodicExportingMetricReader(_WatchedMetrics(metrics, health))
        meter_provider = MeterProvider(
            resource=resource, metric_readers=[reader], shutdown_on_exit=False
        )
        instruments = PodMetrics.make(meter_provider.get_meter(SCOPE))
        _current = ProcessTelemetry(endpoint, tracer_provider, meter_provider, health, instruments)
        atexit.register(shutdown_telemetry)
        return _current


def shutdown_telemetry(ceiling_s: float = FLUSH_CEILING_S) -> bool:
    """Flush and stop the process's telemetry, waiting at most ``ceiling_s``; whether it
    finished in time (what is still unsent then is dropped: the process may end)."""
    global _current
    with _lock:
        current, _current = _current, None
    if current is None:
        return True

    def stop() -> None:
        millis = int(ceiling_s * 1000)
        current.tracer_provider.force_flush(millis)
        current.tracer_provider.shutdown()
        current.meter_provider.shutdown(timeout_millis=millis)  # collects and exports once

    # On a thread of its own: the SDK's shutdown joins its export threads without a limit,
    # and an export may be waiting on a collector that never answers.
    worker = threading.Thread(target=stop, name="telemetry-shutdown", daemon=True)
    worker.start()
    worker.join(ceiling_s)
    return not worker.is_alive()
