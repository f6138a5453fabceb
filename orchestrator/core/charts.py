"""The web page's pictures, drawn on the server as SVG (pure functions of their data).

- :func:`usage_chart`: a pod's tokens over its turns, stacked by kind (cache reads, cache
  writes, uncached input, output), with what each turn cost as a line on its own scale;
- :func:`states_chart`: the time a pod spent in each lifecycle state, one bar each, in the
  colour of the state's public status (:mod:`orchestrator.core.status_colours`);
- :func:`memory_chart`: a host's loaded and unloaded pods over time (stacked bars) and its
  memory (a line).

Each picture has a ``viewBox`` and no fixed size, so it fits a phone's width; every shape a
datum makes carries it as ``data-*`` attributes (the tests read them back).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from orchestrator.core.status_colours import status_colour
from orchestrator.core.svg import (
    GRID,
    MUTED_TEXT,
    Svg,
    compact_number,
    duration,
    nice_ceiling,
)

__all__ = [
    "COST_COLOUR",
    "MEMORY_COLOUR",
    "USAGE_KINDS",
    "MemorySample",
    "TurnUsage",
    "memory_chart",
    "states_chart",
    "usage_chart",
]


@dataclass(frozen=True, slots=True)
class TurnUsage:
    """One turn's tokens by kind and its cost (None: not priced)."""

    turn: int
    cache_read: int = 0
    cache_write: int = 0
    input: int = 0
    output: int = 0
    cost_usd: float | None = None

    @property
    def total(self) -> int:
        """Every token the turn's requests counted."""
        return self.cache_read + self.cache_write + self.input + self.output


@dataclass(frozen=True, slots=True)
class MemorySample:
    """A host at one moment: how many of its pods were loaded and unloaded, its memory."""

    at: float
    """Unix time of the sample."""
    loaded: int
    unloaded: int
    rss_bytes: int | None = None


USAGE_KINDS: tuple[tuple[str, str, str], ...] = (
    ("cache_read", "cache reads", "#4EBF71"),
    ("cache_write", "cache writes", "#FEA62B"),
    ("input", "uncached input", "#0178D4"),
    ("output", "output", "#B48EAD"),
)
"""Each stacked kind, bottom up: the field of :class:`TurnUsage`, its name, its colour."""
COST_COLOUR = "#F5F5F5"
MEMORY_COLOUR = "#E06C75"
LOADED_COLOUR = status_colour("running").strong
UNLOADED_BAR = "#5C6B77"

WIDTH = 480
MB = 1_000_000
LEFT, RIGHT = 50, 424
"""The plot's left and right edges (room for an axis's labels either side)."""


def _axis(svg: Svg, top: float, bottom: float, peak: float, label: str, right: bool) -> None:
    """Three labelled grid lines (0, half, top) for a scale that ends at ``peak``."""
    for share in (0.0, 0.5, 1.0):
        y = bottom - share * (bottom - top)
        if not right:
            svg.line(LEFT, y, RIGHT, y)
        value = label.format(peak * share) if "{" in label else compact_number(peak * share)
        if right:
            svg.text(RIGHT + 6, y + 4, value, size=13, fill=MUTED_TEXT)
        else:
            svg.text(LEFT - 6, y + 4, value, size=13, fill=MUTED_TEXT, anchor="end")


def _x_labels(
    svg: Svg, xs: Sequence[float], labels: Sequence[str], y: float, most: int = 8
) -> None:
    """Label about ``most`` of the slots under the plot: every ``step``-th, and the last
    where it is not crowded by the one before it."""
    count = len(xs)
    step = max(1, -(-count // most))
    shown = list(range(0, count, step))
    if shown[-1] != count - 1:
        if count - 1 - shown[-1] < max(step / 2, 1):
            shown.pop()
        shown.append(count - 1)
    for i in shown:
        svg.text(xs[i], y, labels[i], size=13, fill=MUTED_TEXT, anchor="middle")


def usage_chart(turns: Sequence[TurnUsage], *, title: str = "Tokens and cost by turn") -> str:
    """Stacked token bars per turn and a cost line; a note when there is no turn yet."""
    svg = Svg(WIDTH, 300, title)
    svg.text(12, 26, title, size=17, weight="bold")
    legend = [(colour, name) for _, name, colour in USAGE_KINDS]
    priced = [t.cost_usd for t in turns if t.cost_usd is not None]
    if priced:
        legend.append((COST_COLOUR, "cost ($)"))
    top, bottom = svg.legend(12, 50, legend) + 26, 262.0
    if not turns:
        svg.text(WIDTH / 2, 170, "No turns yet", size=15, fill=MUTED_TEXT, anchor="middle")
        return svg.render()
    peak = nice_ceiling(max(t.total for t in turns))
    _axis(svg, top, bottom, peak, "", right=False)
    slot = (RIGHT - LEFT) / len(turns)
    bar = max(slot * 0.7, 0.5)
    scale = (bottom - top) / peak
    centres: list[float] = []
    for i, turn in enumerate(turns):
        x = LEFT + i * slot + (slot - bar) / 2
        centres.append(x + bar / 2)
        y = bottom
        for kind, _, colour in USAGE_KINDS:
            value = getattr(turn, kind)
            height = value * scale
            y -= height
            svg.rect(x, y, bar, height, colour, turn=turn.turn, kind=kind, value=value)
    _x_labels(svg, centres, [str(t.turn) for t in turns], bottom + 16)
    svg.text((LEFT + RIGHT) / 2, bottom + 32, "turn", size=13, fill=MUTED_TEXT, anchor="middle")
    if priced:
        top_cost = nice_ceiling(max(priced))
        _axis(svg, top, bottom, top_cost, "${:.2f}" if top_cost >= 1 else "${:.3f}", right=True)
        points = [
            (centres[i], bottom - (t.cost_usd / top_cost) * (bottom - top))
            for i, t in enumerate(turns)
            if t.cost_usd is not None
        ]
        if len(points) > 1:
            svg.polyline(points, COST_COLOUR, series="cost")
        for (x, y), turn in zip(points, [t for t in turns if t.cost_usd is not None], strict=True):
            svg.add(
                f'<circle cx="{x:.2f}" cy="{y:.2f}" r="3" fill="{COST_COLOUR}" '
                f'data-turn="{turn.turn}" data-cost="{turn.cost_usd}"/>'
            )
    return svg.render()


def states_chart(
    seconds: Mapping[str, float],
    status_of: Mapping[str, str],
    *,
    title: str = "Time in each state",
) -> str:
    """One horizontal bar per state, longest first, coloured by the state's public status."""
    rows = sorted(seconds.items(), key=lambda kv: (-kv[1], kv[0]))
    row_h = 30
    svg = Svg(WIDTH, 0, title)
    svg.text(12, 26, title, size=17, weight="bold")
    statuses = sorted({status_of.get(state, "") for state, _ in rows} - {""})
    below = svg.legend(12, 50, [(status_colour(s).strong, s) for s in statuses]) - 50
    svg.height = round(74 + below + max(len(rows), 1) * row_h + 8)
    if not rows:
        svg.text(WIDTH / 2, 96, "Nothing counted yet", size=15, fill=MUTED_TEXT, anchor="middle")
        return svg.render()
    label_w = 128.0
    left, right = 12 + label_w, WIDTH - 72.0
    peak = max(s for _, s in rows) or 1.0
    for i, (state, secs) in enumerate(rows):
        y = 66 + below + i * row_h
        colour = status_colour(status_of.get(state, ""))
        svg.text(left - 8, y + 18, state.replace("_", " "), size=14, anchor="end")
        svg.rect(left, y + 4, right - left, row_h - 9, "#181818")
        svg.rect(
            left,
            y + 4,
            (right - left) * secs / peak,
            row_h - 9,
            colour.strong,
            state=state,
            seconds=secs,
            status=status_of.get(state, ""),
            stroke=MUTED_TEXT,
        )
        svg.text(right + 8, y + 18, duration(secs), size=13, fill=MUTED_TEXT)
    svg.line(left, 64 + below, left, 66 + below + len(rows) * row_h, GRID)
    return svg.render()


def memory_chart(samples: Sequence[MemorySample], *, title: str = "Pods and memory") -> str:
    """Loaded and unloaded pods per sample (stacked bars), the host's memory as a line."""
    svg = Svg(WIDTH, 300, title)
    svg.text(12, 26, title, size=17, weight="bold")
    measured = [s.rss_bytes for s in samples if s.rss_bytes is not None]
    legend = [(LOADED_COLOUR, "loaded pods"), (UNLOADED_BAR, "unloaded pods")]
    if measured:
        legend.append((MEMORY_COLOUR, "memory (RSS)"))
    top, bottom = svg.legend(12, 50, legend) + 26, 262.0
    if not samples:
        svg.text(WIDTH / 2, 170, "No samples yet", size=15, fill=MUTED_TEXT, anchor="middle")
        return svg.render()
    peak = nice_ceiling(max(s.loaded + s.unloaded for s in samples))
    _axis(svg, top, bottom, peak, "", right=False)
    slot = (RIGHT - LEFT) / len(samples)
    bar = max(slot * 0.8, 0.5)
    scale = (bottom - top) / peak
    centres: list[float] = []
    for i, sample in enumerate(samples):
        x = LEFT + i * slot + (slot - bar) / 2
        centres.append(x + bar / 2)
        loaded_h = sample.loaded * scale
        svg.rect(
            x,
            bottom - loaded_h,
            bar,
            loaded_h,
            LOADED_COLOUR,
            at=sample.at,
            kind="loaded",
            value=sample.loaded,
        )
        unloaded_h = sample.unloaded * scale
        svg.rect(
            x,
            bottom - loaded_h - unloaded_h,
            bar,
            unloaded_h,
            UNLOADED_BAR,
            at=sample.at,
            kind="unloaded",
            value=sample.unloaded,
        )
    last = samples[-1].at
    labels = [f"-{duration(last - s.at)}" if s.at < last else "now" for s in samples]
    _x_labels(svg, centres, labels, bottom + 16, most=4)
    if measured:
        top_mem = nice_ceiling(max(measured) / MB) * MB
        _axis(svg, top, bottom, top_mem / MB, "{:.0f} MB", right=True)
        points = [
            (centres[i], bottom - (s.rss_bytes / top_mem) * (bottom - top))
            for i, s in enumerate(samples)
            if s.rss_bytes is not None
        ]
        svg.polyline(points, MEMORY_COLOUR, series="memory")
        for (x, y), s in zip(points, [s for s in samples if s.rss_bytes is not None], strict=True):
            svg.add(
                f'<circle cx="{x:.2f}" cy="{y:.2f}" r="2" fill="{MEMORY_COLOUR}" '
                f'data-at="{s.at}" data-rss="{s.rss_bytes}"/>'
            )
    svg.text(12, 294, "pods (left), memory (right)", size=12, fill=MUTED_TEXT)
    return svg.render()
