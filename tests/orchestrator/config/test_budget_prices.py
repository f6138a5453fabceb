"""A budget needs a price for every model that may answer: the pod's own and its fallback
(a request the fallback answers counts at the fallback's prices; unpriced, it would count $0)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from orchestrator.config.model import PodConfig


def test_a_budget_with_an_unpriced_fallback_model_is_refused_naming_its_price_key(
    workspace: Path,
) -> None:
    priced = PodConfig(workspace=workspace, model="claude-sonnet-4-5", budget_usd=1.0)
    assert priced.fallback_model is None
    with pytest.raises(ValidationError) as refused:
        PodConfig(
            workspace=workspace,
            model="claude-sonnet-4-5",
            fallback_model="claude-unpriced-9",
            turn_budget_usd=1.0,
        )
    assert '[prices."claude-unpriced-9"]' in str(refused.value)
    # Without a budget nothing needs a price.
    PodConfig(workspace=workspace, model="claude-sonnet-4-5", fallback_model="claude-unpriced-9")
