"""OpenTelemetry traces and metrics of pods (docs/telemetry.md): the process's SDK
(:mod:`.sdk`), one pod's spans (:mod:`.recorder`), its model requests (:mod:`.provider`) and
the instruments (:mod:`.metrics`).

Importing this package imports OpenTelemetry: only a pod whose ``[telemetry]`` (or the
``OTEL_EXPORTER_OTLP_ENDPOINT`` variable) asks for it does (``orchestrator.serving.pod``).
"""

from orchestrator.adapters.telemetry.provider import TracedProvider
from orchestrator.adapters.telemetry.recorder import PodTelemetry
from orchestrator.adapters.telemetry.sdk import (
    ProcessTelemetry,
    shutdown_telemetry,
    start_telemetry,
)

__all__ = [
    "PodTelemetry",
    "ProcessTelemetry",
    "TracedProvider",
    "shutdown_telemetry",
    "start_telemetry",
]
