"""Bedrock and Vertex: model ids read as families, the capability table, their error names,
their config (a region cannot move the endpoint) and what a workspace may not set."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from conformance.fake_api import FakeAnthropic, Reply, StreamError
from conformance.platforms import PlatformFake, event_frame
from orchestrator.adapters.providers.base import ProviderRequest, ResponseComplete
from orchestrator.adapters.providers.platform_models import (
    PLATFORM_MODELS,
    family,
    platform_model,
)
from orchestrator.adapters.providers.platforms import BedrockProvider
from orchestrator.config.loading import load_config
from orchestrator.config.model import PodConfig
from orchestrator.config.paths import user_config_file
from orchestrator.core.thinking import plan_thinking


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5"),
        ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5"),
        ("global.anthropic.claude-haiku-4-5-20251001-v1:0", "claude-haiku-4-5"),
        ("us-gov.anthropic.claude-3-5-haiku-20241022-v1:0", "claude-3-5-haiku"),
        ("anthropic.claude-opus-4-6-v1", "claude-opus-4-6"),
        ("anthropic.claude-sonnet-4-6", "claude-sonnet-4-6"),
        (
            "arn:aws:bedrock:us-east-1:123456789012:inference-profile/"
            "us.anthropic.claude-opus-4-1-20250805-v1:0",
            "claude-opus-4-1",
        ),
        ("claude-sonnet-4-5@20250929", "claude-sonnet-4-5"),
        ("claude-sonnet-4-6", "claude-sonnet-4-6"),
        ("claude-opus-4@20250514", "claude-opus-4"),
    ],
)
def test_platform_ids_are_read_as_their_family(model: str, expected: str) -> None:
    assert family(model) == expected
    assert platform_model(model) is PLATFORM_MODELS[expected]


def test_an_unknown_model_has_no_row_and_auto_thinking_stays_off() -> None:
    assert platform_model("us.anthropic.claude-future-9-v1:0") is None
    plan = plan_thinking("auto", effort=None, display=None, max_tokens=8192, model=None)
    assert not plan.on


def test_each_row_plans_thinking_the_model_takes() -> None:
    for name, row in PLATFORM_MODELS.items():
        plan = plan_thinking(
            "auto", effort=None, display=None, max_tokens=32_000, model=row.thinking(name)
        )
        kind = plan.thinking["type"] if plan.thinking is not None else None
        assert kind == ("adaptive" if row.adaptive else "enabled" if row.enabled else None), name


@pytest.mark.parametrize(
    "table",
    [
        '[bedrock]\nregion = "x.evil.example#"',
        '[bedrock]\nregion = "us-east-1.evil.example"',
        '[vertex]\nregion = "evil.example/"',
        '[vertex]\nproject_id = "a/../../b"',
        '[bedrock]\nprofile = "a b"',
    ],
)
def test_a_region_or_project_cannot_move_the_endpoint(tmp_path: Path, table: str) -> None:
    # The SDK splices the region into the host name (bedrock-runtime.{region}.amazonaws.com):
    # one with a dot or a '#' would send the signed request, and its conversation, elsewhere.
    key, value = table.split("\n")[1].split(" = ")
    section = table.split("]")[0][1:]
    with pytest.raises(ValidationError, match=re.escape(key)):
        PodConfig.model_validate({"workspace": tmp_path, section: {key: value.strip('"')}})


def test_a_workspace_cannot_choose_the_cloud_account_or_endpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    user = user_config_file()
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text('[bedrock]\nregion = "eu-west-1"\nprofile = "mine"\n')
    workspace = tmp_path / "repo"
    (workspace / ".pod").mkdir(parents=True)
    (workspace / ".pod" / "config.toml").write_text(
        '[bedrock]\nregion = "us-east-1"\nprofile = "attacker"\n'
        '[vertex]\nproject_id = "attacker-project"\nregion = "us-east5"\n'
    )
    config = load_config(workspace)
    assert (config.bedrock.region, config.bedrock.profile) == ("eu-west-1", "mine")
    assert config.vertex.project_id is None and config.vertex.region is None
    [warning] = config.load_warnings
    assert "bedrock" in warning and "vertex" in warning


def test_event_frames_decode_as_bedrock_sends_them() -> None:
    from botocore.eventstream import EventStreamBuffer

    buffer = EventStreamBuffer()
    buffer.add_data(event_frame({":event-type": "chunk", ":message-type": "event"}, b'{"a":1}'))
    buffer.add_data(event_frame({":exception-type": "throttlingException"}, b"{}"))
    first, second = list(buffer)
    assert first.headers[":event-type"] == "chunk" and first.payload == b'{"a":1}'
    assert second.headers[":exception-type"] == "throttlingException"


async def test_an_overload_inside_a_bedrock_stream_is_retried(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    api = FakeAnthropic([StreamError(after_events=0), Reply(text="after the retry")])
    with PlatformFake("bedrock", api) as fake:
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", fake.access_key)
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", fake.secret_key)
        from anthropic.lib.aws._auth import _get_session

        _get_session.cache_clear()  # type: ignore[attr-defined]
        alerts: list[tuple[str, str]] = []
        provider = BedrockProvider(
            "anthropic.claude-sonnet-4-6",
            region=fake.region,
            base_url=fake.base_url,
            retry_base_delay_s=0.01,
            on_alert=lambda level, message: alerts.append((level, message)),
        )
        request = ProviderRequest(
            model=provider.model, system="", messages=[{"role": "user", "content": "hi"}]
        )
        events = [e async for e in provider.stream(request)]
        await provider.aclose()
        _get_session.cache_clear()  # type: ignore[attr-defined]
    final = events[-1]
    assert isinstance(final, ResponseComplete) and final.blocks[0].text == "after the retry"  # type: ignore[union-attr]
    # The exception frame (serviceUnavailableException) was read as the API's overload.
    assert alerts and "overloaded_error" in alerts[0][1], alerts
    assert len(api.requests) == 2


def test_the_config_picks_the_platform_and_its_settings(tmp_path: Path) -> None:
    from orchestrator.adapters.providers.platforms import VertexProvider
    from orchestrator.serving.pod.assemble import make_provider

    bedrock = make_provider(
        PodConfig.model_validate(
            {
                "workspace": tmp_path,
                "provider": "bedrock",
                "model": "anthropic.claude-sonnet-4-6",
                "bedrock": {"region": "eu-west-1", "profile": "work"},
                "provider_max_retries": 2,
            }
        )
    )
    assert isinstance(bedrock, BedrockProvider)
    assert (bedrock.region, bedrock.profile, bedrock.max_retries) == ("eu-west-1", "work", 2)
    fallback = bedrock.with_model("anthropic.claude-haiku-4-5-20251001-v1:0")
    assert (fallback.region, fallback.profile, fallback.name) == ("eu-west-1", "work", "bedrock")
    vertex = make_provider(
        PodConfig.model_validate(
            {
                "workspace": tmp_path,
                "provider": "vertex",
                "vertex": {"project_id": "my-project", "region": "global"},
            }
        )
    )
    assert isinstance(vertex, VertexProvider)
    assert (vertex.project_id, vertex.region) == ("my-project", "global")


def test_a_platform_without_its_extra_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util

    from orchestrator.serving.pod.assemble import PodSetupError, make_provider

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    config = PodConfig.model_validate({"workspace": tmp_path, "provider": "vertex"})
    with pytest.raises(PodSetupError, match=r"pip install 'pod-orchestrator\[vertex\]'"):
        make_provider(config)
