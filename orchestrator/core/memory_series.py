"""A host's pods and memory over time: a bounded ring of samples (pure; the web page's
server samples the host every few seconds and draws it with
:func:`orchestrator.core.charts.memory_chart`)."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from orchestrator.core.charts import MemorySample

__all__ = ["MemorySeries"]


@dataclass
class MemorySeries:
    """The latest ``capacity`` samples, oldest first; older ones fall off."""

    capacity: int = 360
    """Samples kept (360 at one every 5 seconds: the last half hour)."""
    interval_s: float = 5.0
    """How often the server samples the host."""
    _samples: deque[MemorySample] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.capacity < 1:
            raise ValueError("a memory series keeps at least one sample")
        self._samples = deque(maxlen=self.capacity)

    def add(self, sample: MemorySample) -> None:
        """Keep one sample (a sample older than the last one is a clock step: it replaces
        nothing and is kept in order of arrival, as the host saw it)."""
        self._samples.append(sample)

    def samples(self) -> list[MemorySample]:
        """The samples kept, oldest first."""
        return list(self._samples)

    def __len__(self) -> int:
        return len(self._samples)
