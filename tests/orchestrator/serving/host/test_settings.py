"""Provider settings cross to the host as salted digests: a difference is found, a value never
crosses, and a pod that runs offline is never refused for them."""

from __future__ import annotations

from pathlib import Path

from orchestrator.config.model import PodConfig
from orchestrator.serving.host.settings import (
    PROVIDER_ENV,
    ProviderSettings,
    differing_settings,
    mismatch_message,
    provider_settings,
    uses_provider_env,
)

ENV = {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9/", "ANTHROPIC_API_KEY": "sk-secret-1"}


def test_the_same_settings_match_and_each_difference_is_named() -> None:
    mine = provider_settings(ENV)
    assert differing_settings(mine, ENV) == []
    assert differing_settings(mine, ENV | {"ANTHROPIC_API_KEY": "sk-secret-2"}) == [
        "ANTHROPIC_API_KEY"
    ]
    # A variable set on one side only differs, even set to the empty string.
    assert differing_settings(mine, ENV | {"ANTHROPIC_AUTH_TOKEN": ""}) == ["ANTHROPIC_AUTH_TOKEN"]
    assert differing_settings(mine, {}) == ["ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY"]


def test_no_value_crosses_and_each_request_has_its_own_salt() -> None:
    one, two = provider_settings(ENV), provider_settings(ENV)
    assert one.salt != two.salt and one.digests != two.digests
    sent = one.model_dump_json()
    assert "sk-secret-1" not in sent and "127.0.0.1" not in sent
    assert set(one.digests) == set(PROVIDER_ENV)


def test_unreadable_digests_differ_in_everything() -> None:
    bad = ProviderSettings(salt="not hex", digests={})
    assert differing_settings(bad, ENV) == list(PROVIDER_ENV)


def test_only_an_offline_pod_ignores_the_settings(tmp_path: Path) -> None:
    assert not uses_provider_env(PodConfig(workspace=tmp_path, provider="scripted"))
    assert uses_provider_env(PodConfig(workspace=tmp_path, provider="anthropic"))
    # Unset, the provider follows whether the host has a key: the settings decide it.
    assert uses_provider_env(PodConfig(workspace=tmp_path))


def test_the_message_names_what_differs_and_what_to_do() -> None:
    said = mismatch_message(["ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY"])
    assert "another ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY than yours" in said
    assert "--no-host" in said and "`pod host stop`" in said
    joined = mismatch_message(["ANTHROPIC_API_KEY"], pod="alpha")
    assert "`pod shutdown alpha`" in joined
