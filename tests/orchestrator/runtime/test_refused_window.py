"""A "prompt is too long" refusal names the model's real window: the pod takes it when smaller."""

from __future__ import annotations

from pathlib import Path

from orchestrator.adapters.providers.base import refused_window
from orchestrator.config.model import PodConfig
from orchestrator.core.history import History
from orchestrator.runtime.context import Context


def test_the_window_is_read_from_the_api_s_words() -> None:
    message = (
        "provider rejected the request (400): prompt is too long: 66917 tokens > 60000 maximum"
    )
    assert refused_window(message) == 60_000
    assert refused_window("prompt is too long") is None
    assert refused_window("overloaded") is None


def test_only_a_smaller_window_is_taken(tmp_path: Path) -> None:
    context = Context(
        config=PodConfig(workspace=tmp_path, context_window=400_000), history=History()
    )
    assert not context.learn_refused_window(None)
    assert not context.learn_refused_window(500_000)  # a refusal never widens the window
    assert context.window == 400_000
    assert context.learn_refused_window(60_000)
    assert context.window == 60_000
    assert not context.learn_refused_window(60_000)
