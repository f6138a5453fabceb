"""Telemetry tests: each starts the process's telemetry afresh and shuts it down after."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from orchestrator.adapters.telemetry import shutdown_telemetry
from tests.telemetry.receiver import Receiver, otlp_receiver

# The exporters read these at start: spans leave in small batches at once, metrics when the
# test flushes them (a shutdown), and a dead collector is given up on quickly.
_ENVIRONMENT = {
    "OTEL_BSP_SCHEDULE_DELAY": "50",
    "OTEL_METRIC_EXPORT_INTERVAL": "3600000",
    "OTEL_EXPORTER_OTLP_TIMEOUT": "2",
}


@pytest.fixture(autouse=True)
def fresh_telemetry(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No telemetry from an earlier test, none from the environment, none left after."""
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in _ENVIRONMENT.items():
        monkeypatch.setenv(name, value)
    shutdown_telemetry()
    yield
    shutdown_telemetry()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    """An OTLP/HTTP collector on localhost."""
    with otlp_receiver() as collector:
        yield collector
