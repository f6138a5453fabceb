"""The memory series keeps the latest samples, oldest first."""

from __future__ import annotations

import pytest

from orchestrator.core.charts import MemorySample
from orchestrator.core.memory_series import MemorySeries


def test_the_oldest_samples_fall_off() -> None:
    series = MemorySeries(capacity=3)
    for at in range(5):
        series.add(MemorySample(at=float(at), loaded=at, unloaded=0))
    assert [s.at for s in series.samples()] == [2.0, 3.0, 4.0]
    assert len(series) == 3


def test_a_series_keeps_something() -> None:
    with pytest.raises(ValueError, match="at least one"):
        MemorySeries(capacity=0)
