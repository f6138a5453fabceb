"""``provider = "bedrock"`` and ``"vertex"``: a turn with a tool call through the SDK's own
platform clients, against local fakes of each endpoint (conformance/platforms.py), with
credentials the way each platform's users have them (AWS variables, an application-default
credentials file) and no network."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from anthropic.lib.aws._auth import _get_session

from conformance.fake_api import DEFAULT_MODELS, FakeAnthropic, Fault, ModelSpec, Reply, ToolCall
from conformance.platforms import PlatformFake
from orchestrator.adapters.providers.platforms import platform_provider
from orchestrator.config.model import PodConfig
from tests.e2e.harness import collect_until, running_pod

BEDROCK_MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
BEDROCK_FALLBACK = "anthropic.claude-haiku-4-5-20251001-v1:0"
VERTEX_MODEL = "claude-sonnet-4-6"
# The platform models as the fake API checks them: thinking as each takes it, no server tools.
PLATFORM_SPECS = [
    *DEFAULT_MODELS,
    ModelSpec(id=BEDROCK_MODEL, thinking=frozenset({"enabled", "disabled"}), efforts=frozenset(),
              server_tools=frozenset()),
    ModelSpec(id=BEDROCK_FALLBACK, thinking=frozenset({"enabled", "disabled"}),
              efforts=frozenset(), server_tools=frozenset()),
]  # fmt: skip


@pytest.fixture
def no_cloud_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """No credentials or endpoints of the machine's own, and nothing that reaches out."""
    for name in (
        "AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION",
        "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
        "AWS_BEARER_TOKEN_BEDROCK", "ANTHROPIC_BEDROCK_BASE_URL", "ANTHROPIC_VERTEX_BASE_URL",
        "ANTHROPIC_VERTEX_PROJECT_ID", "CLOUD_ML_REGION", "GOOGLE_CLOUD_PROJECT",
        "GOOGLE_APPLICATION_CREDENTIALS",
    ):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # no instance-metadata lookups
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "no-gcloud"))  # no gcloud ADC
    monkeypatch.setenv("GCE_METADATA_HOST", "127.0.0.1:9")  # a metadata probe fails at once
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    # The SDK keeps one boto3 session per region and profile for the process: each test's
    # credentials must be read afresh.
    clear = _get_session.cache_clear  # type: ignore[attr-defined]  # the SDK's lru_cache
    clear()
    yield
    clear()


def _tool_turn(api: FakeAnthropic, workspace: Path) -> None:
    (workspace / "notes.txt").write_text("platform notes\n")
    api.push(
        Reply(text="Reading.", tool_calls=[ToolCall("read_file", {"path": "notes.txt"})]),
        Reply(text="It says: platform notes."),
    )


async def _run_turn(workspace: Path, short_dir: Path, config: PodConfig) -> list[str]:
    """A prompt whose answer calls read_file, until the turn ends; the alerts said."""
    provider = platform_provider(config, on_alert=None)
    provider.retry_base_delay_s = 0.01
    async with running_pod(workspace, short_dir, provider=provider, loaded=config) as pod:
        c = await pod.client()
        await c.send("run", {"input": "read notes.txt"})
        events = await collect_until(c, "run_end", timeout=30)
        assert events[-1].data == {"result": "finished"}, [e.data for e in events]
        results = [e.data for e in events if e.event == "tool_result"]
        assert results and not results[0].get("is_error"), results
        history = (await c.request("get_history")).data
        kinds = [i["kind"] for i in history["items"]]
        assert kinds[-3:] == ["assistant", "tool_result", "assistant"]
        # What the pod said at start (kept for attaching clients), then during the turn.
        alerts = [a["message"] for a in history["alerts"]]
        alerts += [e.data["message"] for e in events if e.event == "alert"]
        await c.close()
    await provider.aclose()
    return alerts


def _config(workspace: Path, provider: str, **extra: object) -> PodConfig:
    return PodConfig.model_validate(
        {
            "workspace": workspace,
            "name": "t",
            "provider": provider,
            "sandbox": {"mode": "off"},
            "permissions": {"mode": "accept-edits", "deny": ["bash"]},
            **extra,
        }
    )


async def test_bedrock_runs_a_tool_turn_signed_with_the_aws_environment(
    workspace: Path, short_dir: Path, monkeypatch: pytest.MonkeyPatch, no_cloud_env: None
) -> None:
    with PlatformFake("bedrock", FakeAnthropic(models=PLATFORM_SPECS)) as fake:
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", fake.access_key)
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", fake.secret_key)
        monkeypatch.setenv("ANTHROPIC_BEDROCK_BASE_URL", fake.base_url)
        _tool_turn(fake.api, workspace)
        config = _config(workspace, "bedrock", model=BEDROCK_MODEL, bedrock={"region": fake.region})
        alerts = await _run_turn(workspace, short_dir, config)
    assert [r.status for r in fake.requests] == [200, 200], [r.refused for r in fake.requests]
    assert all(
        r.path == f"/model/{BEDROCK_MODEL}/invoke-with-response-stream" for r in fake.requests
    )
    requests = fake.api.requests
    assert all(r.valid for r in requests), [r.error for r in requests]
    assert {r.body["model"] for r in requests} == {BEDROCK_MODEL}
    # Thinking as the table says Sonnet 4.5 takes it (a budget), no server tools.
    assert requests[0].body["thinking"]["type"] == "enabled"
    assert all(not t.get("type", "").startswith("web_") for t in requests[0].body["tools"])
    said = [a for a in alerts if "Amazon Bedrock has no Models API" in a]
    assert len(said) == 1 and "web search" in said[0].lower()


async def test_bedrock_refuses_other_credentials_and_the_pod_says_so(
    workspace: Path, short_dir: Path, monkeypatch: pytest.MonkeyPatch, no_cloud_env: None
) -> None:
    with PlatformFake("bedrock", FakeAnthropic(models=PLATFORM_SPECS)) as fake:
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", fake.access_key)
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
        monkeypatch.setenv("ANTHROPIC_BEDROCK_BASE_URL", fake.base_url)
        config = _config(workspace, "bedrock", model=BEDROCK_MODEL, bedrock={"region": fake.region})
        provider = platform_provider(config, on_alert=None)
        async with running_pod(workspace, short_dir, provider=provider, loaded=config) as pod:
            c = await pod.client()
            await c.send("run", {"input": "hi"})
            events = await collect_until(c, "run_end", timeout=30)
            assert events[-1].data == {"result": "errored"}
            errors = [e.data["message"] for e in events if e.event == "error"]
            assert errors and "403" in errors[0] and "signature" in errors[0].lower()
            await c.close()
        await provider.aclose()
    assert fake.api.requests == []  # never reached the model
    assert [r.status for r in fake.requests] == [403]


async def test_bedrock_overload_falls_back_to_the_platform_fallback_model(
    workspace: Path, short_dir: Path, monkeypatch: pytest.MonkeyPatch, no_cloud_env: None
) -> None:
    with PlatformFake("bedrock", FakeAnthropic(models=PLATFORM_SPECS)) as fake:
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", fake.access_key)
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", fake.secret_key)
        monkeypatch.setenv("ANTHROPIC_BEDROCK_BASE_URL", fake.base_url)
        fake.api.model_faults[BEDROCK_MODEL] = Fault(status=529)
        _tool_turn(fake.api, workspace)
        config = _config(
            workspace,
            "bedrock",
            model=BEDROCK_MODEL,
            fallback_model=BEDROCK_FALLBACK,
            provider_max_retries=1,
            bedrock={"region": fake.region},
        )
        alerts = await _run_turn(workspace, short_dir, config)
    # Bedrock answers the overload as 503 ServiceUnavailableException: retried, then the
    # fallback takes the request and the rest of the turn.
    assert [r.status for r in fake.requests] == [503, 503, 200, 200]
    assert [r.body["model"] for r in fake.api.requests] == [BEDROCK_MODEL] * 2 + [
        BEDROCK_FALLBACK
    ] * 2
    assert any("overloaded" in a and BEDROCK_FALLBACK in a for a in alerts), alerts


async def test_vertex_runs_a_tool_turn_with_application_default_credentials(
    workspace: Path,
    short_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    no_cloud_env: None,
) -> None:
    with PlatformFake("vertex", FakeAnthropic(), region="us-east5") as fake:
        monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(fake.adc_file(tmp_path)))
        monkeypatch.setenv("ANTHROPIC_VERTEX_BASE_URL", fake.base_url)
        _tool_turn(fake.api, workspace)
        config = _config(
            workspace,
            "vertex",
            model=VERTEX_MODEL,
            vertex={"project_id": fake.project_id, "region": fake.region},
        )
        alerts = await _run_turn(workspace, short_dir, config)
    # One token fetched from the credentials' token_uri, then two signed-in predictions.
    paths = [r.path for r in fake.requests]
    assert paths[0] == "/token" and len(paths) == 3
    assert all(p.endswith(f"/models/{VERTEX_MODEL}:streamRawPredict") for p in paths[1:])
    assert [r.status for r in fake.requests] == [200, 200, 200]
    requests = fake.api.requests
    assert all(r.valid for r in requests) and {r.body["model"] for r in requests} == {VERTEX_MODEL}
    assert requests[0].body["thinking"]["type"] == "adaptive"  # Sonnet 4.6, from the table
    assert any("Google Vertex AI has no Models API" in a for a in alerts), alerts


async def test_vertex_errors_in_googles_shape_are_read_as_the_api_s(
    workspace: Path,
    short_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    no_cloud_env: None,
) -> None:
    with PlatformFake("vertex", FakeAnthropic(), region="us-east5") as fake:
        monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(fake.adc_file(tmp_path)))
        monkeypatch.setenv("ANTHROPIC_VERTEX_BASE_URL", fake.base_url)
        # The project cannot use this model: Vertex's NOT_FOUND, a fallback cause.
        fake.api.model_faults["claude-opus-4-6"] = Fault(status=404)
        fake.api.push(Reply(text="answered by the fallback"))
        config = _config(
            workspace,
            "vertex",
            model="claude-opus-4-6",
            fallback_model=VERTEX_MODEL,
            vertex={"project_id": fake.project_id, "region": fake.region},
        )
        provider = platform_provider(config, on_alert=None)
        async with running_pod(workspace, short_dir, provider=provider, loaded=config) as pod:
            c = await pod.client()
            await c.send("run", {"input": "hi"})
            events = await collect_until(c, "run_end", timeout=30)
            assert events[-1].data == {"result": "finished"}
            alerts = [e.data["message"] for e in events if e.event == "alert"]
            assert any("not_found" in a and "Publisher Model" in a for a in alerts), alerts
            await c.close()
        await provider.aclose()
    statuses = [r.status for r in fake.requests if r.path != "/token"]
    assert statuses == [404, 200]  # a 404 is not retried
