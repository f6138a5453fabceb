"""Deciding what thinking a pod's requests ask for, from the setting and the model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from anthropic.types import ModelCapabilities

from orchestrator.config.model import PodConfig
from orchestrator.core.thinking import (
    DEFAULT_BUDGET,
    ModelThinking,
    ThinkingPlan,
    ThinkingRefused,
    ThinkingSetting,
    plan_thinking,
)

ADAPTIVE_ONLY = ModelThinking(
    "claude-opus-5", adaptive=True, disabled=False, efforts=frozenset({"low", "high", "max"})
)
BOTH = ModelThinking("claude-sonnet-4-6", adaptive=True, enabled=True, efforts=frozenset({"high"}))
ENABLED_ONLY = ModelThinking("claude-sonnet-4-5", enabled=True)
NONE = ModelThinking("claude-3-5-haiku")


def plan(setting: ThinkingSetting, model: ModelThinking | None, **kw: Any) -> ThinkingPlan:
    return plan_thinking(
        setting,
        effort=kw.get("effort"),
        display=kw.get("display"),
        max_tokens=kw.get("max_tokens", 32_000),
        model=model,
    )


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        (ADAPTIVE_ONLY, {"type": "adaptive"}),
        (BOTH, {"type": "adaptive"}),
        (ENABLED_ONLY, {"type": "enabled", "budget_tokens": DEFAULT_BUDGET}),
        (NONE, None),
        (None, None),  # capabilities unknown: nothing is guessed
    ],
)
def test_auto_asks_for_what_the_model_takes(model: ModelThinking | None, expected: object) -> None:
    decided = plan("auto", model)
    assert decided.thinking == expected
    assert decided.on is (expected is not None)


def test_auto_keeps_the_budget_below_max_tokens() -> None:
    assert plan("auto", ENABLED_ONLY, max_tokens=8192).thinking == {
        "type": "enabled",
        "budget_tokens": 8191,
    }
    assert plan("auto", ENABLED_ONLY, max_tokens=1024).thinking is None


@pytest.mark.parametrize(
    ("setting", "model", "words"),
    [
        ("off", ADAPTIVE_ONLY, "claude-opus-5 accepts adaptive, and cannot turn thinking off"),
        ("adaptive", ENABLED_ONLY, "claude-sonnet-4-5 accepts a budget"),
        (4096, ADAPTIVE_ONLY, "claude-opus-5 accepts adaptive"),
        ("adaptive", NONE, "claude-3-5-haiku accepts no thinking"),
        (512, BOTH, "at least 1024"),
        (40_000, BOTH, "below max_tokens (32000)"),
    ],
)
def test_a_setting_the_model_refuses_is_one_error_naming_it(
    setting: ThinkingSetting, model: ModelThinking, words: str
) -> None:
    with pytest.raises(ThinkingRefused, match="refused") as refused:
        plan(setting, model)
    assert words in str(refused.value)


def test_explicit_settings_are_sent_as_asked_when_the_model_cannot_tell() -> None:
    assert plan("adaptive", None).thinking == {"type": "adaptive"}
    assert plan(2048, None).thinking == {"type": "enabled", "budget_tokens": 2048}
    assert plan("off", None).thinking is None  # nothing sent: the API's default is off
    assert plan("off", BOTH).thinking == {"type": "disabled"}


def test_effort_goes_in_output_config_where_the_model_takes_that_level() -> None:
    decided = plan("auto", ADAPTIVE_ONLY, effort="max")
    assert decided.output_config == {"effort": "max"}
    assert decided.summary == "adaptive, effort max"
    with pytest.raises(ThinkingRefused, match='effort = "low" is refused'):
        plan("auto", BOTH, effort="low")
    with pytest.raises(ThinkingRefused, match="no effort"):
        plan("auto", ENABLED_ONLY, effort="high")


def test_display_needs_adaptive_thinking() -> None:
    assert plan("adaptive", BOTH, display="omitted").thinking == {
        "type": "adaptive",
        "display": "omitted",
    }
    with pytest.raises(ThinkingRefused, match="needs adaptive"):
        plan("auto", ENABLED_ONLY, display="omitted")


def test_capabilities_are_read_from_the_sdks_model_info() -> None:
    def support(ok: bool) -> dict[str, bool]:
        return {"supported": ok}

    caps = ModelCapabilities.model_validate(
        {
            "batch": support(True),
            "citations": support(True),
            "code_execution": support(False),
            "context_management": {"supported": False},
            "effort": {
                "supported": True,
                "low": support(True),
                "medium": support(True),
                "high": support(True),
                "max": support(False),
                "xhigh": support(True),
            },
            "image_input": support(True),
            "pdf_input": support(True),
            "server_tools": {
                "supported": False,
                "code_execution": support(False),
                "web_search": support(False),
            },
            "structured_outputs": support(True),
            "thinking": {
                "supported": True,
                "types": {
                    "adaptive": support(True),
                    "enabled": support(False),
                    "disabled": support(False),
                    "between_tools": support(False),
                },
            },
        }
    )
    model = ModelThinking.from_capabilities("claude-next", caps)
    assert (model.adaptive, model.enabled, model.disabled) == (True, False, False)
    assert model.efforts == {"low", "medium", "high", "xhigh"}


def test_the_config_refuses_what_it_can_without_asking_the_model() -> None:
    with pytest.raises(ValueError, match="below max_tokens"):
        PodConfig(workspace=Path("/w"), thinking=8192, max_tokens=8192)
    with pytest.raises(ValueError, match="1024"):
        PodConfig(workspace=Path("/w"), thinking=100)
    with pytest.raises(ValueError, match="needs thinking on"):
        PodConfig(workspace=Path("/w"), thinking="off", thinking_display="omitted")
    assert PodConfig(workspace=Path("/w"), thinking=4096).thinking == 4096
