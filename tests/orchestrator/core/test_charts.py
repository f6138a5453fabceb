"""The server-drawn charts: parsed back as XML, each shape says what the data said, scaled
the same; hostile names stay text; the pictures have no fixed width."""

from __future__ import annotations

import itertools
import xml.etree.ElementTree as ET

import pytest

from orchestrator.core.charts import (
    USAGE_KINDS,
    MemorySample,
    TurnUsage,
    memory_chart,
    states_chart,
    usage_chart,
)
from orchestrator.core.status_colours import STATUS_COLOURS
from orchestrator.core.svg import compact_number, duration, nice_ceiling, text_of

NS = "{http://www.w3.org/2000/svg}"

TURNS = [
    TurnUsage(turn=1, cache_read=0, cache_write=3000, input=120, output=400, cost_usd=0.02),
    TurnUsage(turn=2, cache_read=3000, cache_write=500, input=80, output=900, cost_usd=0.015),
    TurnUsage(turn=4, cache_read=3500, cache_write=0, input=40, output=60, cost_usd=None),
]


def parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    assert root.tag == f"{NS}svg"
    return root


def shapes(root: ET.Element, tag: str, attr: str) -> list[ET.Element]:
    return [e for e in root.iter(f"{NS}{tag}") if attr in e.attrib]


def test_usage_bars_stack_each_kind_in_proportion() -> None:
    root = parse(usage_chart(TURNS))
    assert "width" not in root.attrib and root.attrib["viewBox"].startswith("0 0 ")
    segments = shapes(root, "rect", "data-kind")
    assert len(segments) == len(TURNS) * len(USAGE_KINDS)
    heights: dict[tuple[int, str], float] = {}
    for rect in segments:
        key = (int(rect.attrib["data-turn"]), rect.attrib["data-kind"])
        heights[key] = float(rect.attrib["height"])
        turn = next(t for t in TURNS if t.turn == key[0])
        assert int(rect.attrib["data-value"]) == getattr(turn, key[1])
    # Every kind is drawn at one scale: tokens per unit of height is the same everywhere.
    ratios = {
        getattr(next(t for t in TURNS if t.turn == turn), kind) / h
        for (turn, kind), h in heights.items()
        if h > 0
    }
    assert max(ratios) - min(ratios) < 0.05 * max(ratios)
    # Stacked: within a bar each segment starts where the one below it ends, bottom up.
    for turn in TURNS:
        stack = [r for r in segments if int(r.attrib["data-turn"]) == turn.turn]
        assert [r.attrib["data-kind"] for r in stack] == [k for k, _, _ in USAGE_KINDS]
        for below, above in itertools.pairwise(stack):
            top_of_below = float(below.attrib["y"])
            bottom_of_above = float(above.attrib["y"]) + float(above.attrib["height"])
            assert abs(top_of_below - bottom_of_above) < 0.02
    # The tallest bar is the turn with the most tokens.
    totals = {t.turn: sum(heights[(t.turn, k)] for k, _, _ in USAGE_KINDS) for t in TURNS}
    assert max(totals, key=totals.__getitem__) == max(TURNS, key=lambda t: t.total).turn


def test_the_cost_line_marks_the_priced_turns_only() -> None:
    root = parse(usage_chart(TURNS))
    points = shapes(root, "circle", "data-cost")
    assert [int(p.attrib["data-turn"]) for p in points] == [1, 2]
    # Dearer is higher (a smaller y).
    by_turn = {int(p.attrib["data-turn"]): float(p.attrib["cy"]) for p in points}
    assert by_turn[1] < by_turn[2]
    [line] = shapes(root, "polyline", "data-series")
    assert len(line.attrib["points"].split()) == 2


def test_no_turns_says_so() -> None:
    root = parse(usage_chart([]))
    assert not shapes(root, "rect", "data-kind")
    assert "No turns yet" in "".join(root.itertext())


def test_state_bars_are_as_long_as_the_time_and_coloured_by_status() -> None:
    seconds = {"idle": 120.0, "requesting": 30.0, "paused": 60.0, "awaiting_approval": 15.0}
    status_of = {
        "idle": "idle",
        "requesting": "running",
        "paused": "paused",
        "awaiting_approval": "running",
    }
    root = parse(states_chart(seconds, status_of))
    bars = shapes(root, "rect", "data-state")
    assert [b.attrib["data-state"] for b in bars] == [
        "idle",
        "paused",
        "requesting",
        "awaiting_approval",
    ]
    widths = {b.attrib["data-state"]: float(b.attrib["width"]) for b in bars}
    for state, secs in seconds.items():
        assert widths[state] / widths["idle"] == pytest.approx(secs / 120.0, rel=0.01)
    for bar in bars:
        expected = STATUS_COLOURS[status_of[bar.attrib["data-state"]]].strong
        assert bar.attrib["fill"] == expected


def test_memory_chart_stacks_loaded_and_unloaded_and_draws_memory() -> None:
    samples = [
        MemorySample(at=1000.0, loaded=1, unloaded=3, rss_bytes=80_000_000),
        MemorySample(at=1005.0, loaded=3, unloaded=1, rss_bytes=140_000_000),
        MemorySample(at=1010.0, loaded=2, unloaded=2, rss_bytes=None),
    ]
    root = parse(memory_chart(samples))
    bars = shapes(root, "rect", "data-kind")
    loaded = {
        float(b.attrib["data-at"]): float(b.attrib["height"])
        for b in bars
        if b.attrib["data-kind"] == "loaded"
    }
    unloaded = {
        float(b.attrib["data-at"]): float(b.attrib["height"])
        for b in bars
        if b.attrib["data-kind"] == "unloaded"
    }
    assert loaded[1005.0] == pytest.approx(3 * loaded[1000.0])
    assert unloaded[1000.0] == pytest.approx(3 * unloaded[1005.0])
    # Four pods each time: every stack is as tall.
    assert {round(loaded[t] + unloaded[t], 3) for t in loaded} == {
        round(loaded[1000.0] + unloaded[1000.0], 3)
    }
    points = shapes(root, "circle", "data-rss")
    assert [float(p.attrib["data-at"]) for p in points] == [1000.0, 1005.0]
    assert float(points[1].attrib["cy"]) < float(points[0].attrib["cy"])


HOSTILE = [
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(1)>',
    "name\x00with\x07controls\x1b[31m",
    "lone \ud800 surrogate",
    "&amp; ]]> <!-- -->",
]


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_text_stays_text(name: str) -> None:
    for svg in (
        usage_chart(TURNS, title=name),
        states_chart({name: 3.0}, {name: "running"}, title=name),
        memory_chart([MemorySample(at=1.0, loaded=1, unloaded=0)], title=name),
    ):
        root = parse(svg)  # well-formed XML whatever the name holds
        tags = {e.tag for e in root.iter()}
        assert tags <= {
            f"{NS}{t}" for t in ("svg", "title", "rect", "text", "line", "polyline", "circle")
        }
        assert not any(k.startswith("on") for e in root.iter() for k in e.attrib)


def test_helpers() -> None:
    assert nice_ceiling(0) == 1.0
    assert nice_ceiling(7300) == 10000.0
    assert nice_ceiling(1900) == 2000.0
    assert nice_ceiling(0.012) == pytest.approx(0.02)
    assert compact_number(1234) == "1.2k" and compact_number(3_400_000) == "3.4M"
    assert duration(75.2) == "1m 15s" and duration(4000) == "1h 6m" and duration(3.25) == "3.2s"
    assert len(text_of("x" * 500)) <= 80
