"""``[telemetry]``: OpenTelemetry traces and metrics sent to a collector (docs/telemetry.md).

The model's field docstrings are the key reference of docs/configuration.md. Only the user's
own config may set this table: a workspace's ``.pod/config.toml`` choosing a collector would
have the pod send its work (and, with ``log_content``, the prompts) to the repository's
server (:mod:`orchestrator.config.grants`).
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, field_validator

__all__ = ["ENDPOINT_VARIABLES", "TelemetryConfig", "telemetry_endpoint"]

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
"""The standard variables that turn telemetry on without a config key."""


class TelemetryConfig(BaseModel):
    """Where the pod sends its traces and metrics, and whether they carry any content."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, defer_build=True)

    otlp_endpoint: str | None = None
    """The OTLP/HTTP collector, e.g. ``"http://127.0.0.1:4318"`` (``/v1/traces`` and
    ``/v1/metrics`` are added). Unset: the standard ``OTEL_EXPORTER_OTLP_ENDPOINT`` variable,
    and when that is unset too, no telemetry (nothing of OpenTelemetry is even imported).
    Needs the ``otel`` extra (``pip install 'pod-orchestrator[otel]'``)."""
    log_content: bool = False
    """Put prompts, the model's text, tool arguments and results in spans. Off: spans carry
    names, ids, counts and timings only."""

    @field_validator("otlp_endpoint")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"must be an http:// or https:// URL, got {value!r}")
        return value.rstrip("/")


def telemetry_endpoint(config: TelemetryConfig, environ: Mapping[str, str]) -> str | None:
    """The base URL to export to, ``""`` when only the ``OTEL_*`` variables say where (the
    exporters read them), or None: telemetry is off (``OTEL_SDK_DISABLED=true`` wins)."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    if config.otlp_endpoint is not None:
        return config.otlp_endpoint
    if any(environ.get(name, "").strip() for name in ENDPOINT_VARIABLES):
        return ""
    return None
