"""``[telemetry]``: where it points, what turns it on and off, and a pod built without the
``otel`` extra."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from orchestrator.config.loading import load_config
from orchestrator.config.paths import user_config_file
from orchestrator.config.telemetry import TelemetryConfig, telemetry_endpoint
from orchestrator.errors import OrchestratorError
from tests.e2e.harness import running_pod


def test_the_config_key_wins_and_the_standard_variable_turns_it_on() -> None:
    configured = TelemetryConfig(otlp_endpoint="http://collector:4318/")
    assert telemetry_endpoint(configured, {}) == "http://collector:4318"
    assert telemetry_endpoint(configured, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x"}) == (
        "http://collector:4318"
    )
    unset = TelemetryConfig()
    assert telemetry_endpoint(unset, {}) is None  # off by default
    assert telemetry_endpoint(unset, {"OTEL_EXPORTER_OTLP_ENDPOINT": " "}) is None
    # "": on, the exporters read the variables themselves.
    assert telemetry_endpoint(unset, {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://x"}) == ""
    off = {"OTEL_SDK_DISABLED": "TRUE", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x"}
    assert telemetry_endpoint(configured, off) is None


@pytest.mark.parametrize("value", ["collector:4318", "file:///tmp/spans", "http://", "ftp://x"])
def test_an_endpoint_that_is_not_an_http_url_is_refused_naming_the_key(
    tmp_path: Path, value: str
) -> None:
    user = user_config_file()
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text(f'[telemetry]\notlp_endpoint = "{value}"\n')
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with pytest.raises(OrchestratorError) as refused:
        load_config(workspace)
    assert "telemetry.otlp_endpoint" in str(refused.value)
    assert "http://" in str(refused.value)


async def test_without_the_extra_a_configured_pod_runs_and_says_why_it_sends_nothing(
    workspace: Path, short_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "orchestrator.adapters.telemetry", None)  # not installed
    telemetry = {"otlp_endpoint": "http://127.0.0.1:9"}
    async with running_pod(workspace, short_dir, telemetry=telemetry) as pod:
        client = await pod.client()
        history = await client.request("get_history")
        status = await client.request("get_status")
        await client.close()
    [alert] = [a for a in history.data["alerts"] if "OpenTelemetry" in a["message"]]
    assert "pod-orchestrator[otel]" in alert["message"] and alert["level"] == "warn"
    assert status.data["status"] == "idle"
    assert "OTEL_EXPORTER_OTLP_ENDPOINT" not in os.environ


async def test_a_second_pod_of_the_process_is_told_where_its_telemetry_goes(
    workspace: Path, short_dir: Path, tmp_path: Path
) -> None:
    other, sockets = tmp_path / "other", short_dir / "b"
    other.mkdir()
    sockets.mkdir()
    first = {"otlp_endpoint": "http://127.0.0.1:9/first"}
    second = {"otlp_endpoint": "http://127.0.0.1:9/second"}
    async with running_pod(workspace, short_dir, telemetry=first) as pod:
        client = await pod.client()
        history = await client.request("get_history")
        await client.close()
        assert not [a for a in history.data["alerts"] if "telemetry" in a["message"]]
        async with running_pod(other, sockets, telemetry=second) as later:
            client = await later.client()
            history = await client.request("get_history")
            await client.close()
    [alert] = [a for a in history.data["alerts"] if "telemetry goes to" in a["message"]]
    assert "/first" in alert["message"] and "/second" in alert["message"]
