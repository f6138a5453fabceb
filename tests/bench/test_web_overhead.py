"""``bench.web_overhead`` in smoke size: the shape of its JSON, and that it measured what it
says (the on pods searched, the off pod did not)."""

from __future__ import annotations

from bench import web_overhead
from tests.bench.test_bench_smoke import assert_shape


def test_web_overhead_quick() -> None:
    result = web_overhead.run(quick=True)
    assert_shape(result, "web_overhead")
    figures = result["results"]
    searched = figures["server_calls_per_turn"]
    assert searched["off"] == 0 and searched["on"] > 0 and searched["pause"] > 0
    for variant in web_overhead.VARIANTS:
        assert figures[f"{variant}_cpu_ms_per_round"] > 0
        assert figures[f"{variant}_wall_ms_per_round"] > 0
    inner = figures["in_process"]
    assert inner["off_cpu_ms_per_round"] > 0 and inner["on_cpu_ms_per_round"] > 0
    assert figures["ratio"] > 0


def test_the_scripts_make_the_same_rounds_with_and_without_server_tools() -> None:
    off = web_overhead.script("off", rounds=8, turns=2)
    on = web_overhead.script("on", rounds=8, turns=2)
    paused = web_overhead.script("pause", rounds=8, turns=2)
    assert len(off) == len(on) == len(paused) == 16
    assert not any(step.get("server_calls") for step in off)
    assert all(step["server_calls"] for step in on)
    # The same client rounds: a noop call in every round but the last of a turn.
    calls = [[bool(s.get("tool_calls")) for s in steps] for steps in (off, on)]
    assert calls[0] == calls[1] == [n % 8 != 7 for n in range(16)]
    assert [s.get("stop_reason") for s in paused].count("pause_turn") == 4
