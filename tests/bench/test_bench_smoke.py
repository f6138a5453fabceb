"""Smoke tests of the benchmarks: each runs in ``--quick`` mode and reports sane figures.

Speed is never asserted here (that is what ``python -m bench`` reports); these tests check
that every benchmark runs, measures what it was asked to (sample counts, sizes, complete
streams) and produces the JSON shape the summary table and ``latest.json`` rely on.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench import (
    BENCHMARKS,
    STANDALONE,
    checkpoint,
    context,
    context_economy,
    fanout,
    fs_read,
    memory,
    pause_latency,
    peers,
    reload,
    round_overhead,
    session_writes,
    startup,
    subpods,
)
from bench._common import history_items, latency_stats, percentile

REPO = Path(__file__).resolve().parents[2]


def assert_shape(result: dict[str, Any], name: str) -> None:
    """The keys every benchmark result has, and a table of well-formed rows."""
    assert result["benchmark"] == name
    assert result["quick"] is True
    assert isinstance(result["results"], dict) and result["results"]
    assert isinstance(result["params"], dict)
    assert result["table"], "the summary table needs rows"
    for line in result["table"]:
        assert set(line) >= {"metric", "value", "unit"}, line
        value = line["value"]
        if value is not None:
            assert isinstance(value, int | float) and math.isfinite(value), line
        if "target" in line:
            assert isinstance(line["met"], bool), line
    json.dumps(result)  # serialisable as printed


def assert_latency(stats: dict[str, Any], n: int) -> None:
    """A latency summary of n positive samples, ordered percentiles."""
    assert stats["n"] == n
    assert 0 < stats["min_ms"] <= stats["p50_ms"] <= stats["p95_ms"] <= stats["p99_ms"]
    assert stats["p99_ms"] <= stats["max_ms"]


# -- shared pieces ----------------------------------------------------------------------------------


def test_percentiles_interpolate_like_numpy() -> None:
    samples = [float(x) for x in range(1, 101)]
    assert percentile(samples, 50) == pytest.approx(50.5)
    assert percentile(samples, 99) == pytest.approx(99.01)
    assert percentile([3.0], 95) == 3.0
    stats = latency_stats([0.001, 0.002, 0.003])
    assert stats["n"] == 3 and stats["median_ms"] == pytest.approx(2.0)


@pytest.mark.parametrize("n", [0, 1, 4, 6, 10, 101, 1_000])
def test_history_items_are_wire_valid_and_closed(n: int) -> None:
    from orchestrator.core.repair import pending_tool_calls
    from orchestrator.core.validator import validate_wire
    from orchestrator.core.wire import to_wire

    items = history_items(n)
    assert len(items) == n
    assert [i.seq for i in items] == list(range(1, n + 1))
    assert pending_tool_calls(items) == []
    if n:
        assert validate_wire([*to_wire(items), {"role": "user", "content": "next"}]) == []


# -- each benchmark ---------------------------------------------------------------------------------


def test_round_overhead_quick() -> None:
    result = round_overhead.run(quick=True)
    assert_shape(result, "round_overhead")
    by_history = result["results"]["by_history"]
    assert list(by_history) == [str(n) for n in round_overhead.QUICK_SIZES]
    for n, fig in by_history.items():
        assert fig["history_items"] == int(n)
        assert fig["turns_measured"] == 1
        assert fig["ms_per_round_median"] > 0
        breakdown = fig["breakdown"]
        for bucket in ("wire build", "validator (turn)", "machine transitions"):
            assert breakdown[bucket]["ms_per_round"] > 0
        # One request per round and two machine events per tool round (plus the turn's own).
        assert breakdown["wire build"]["calls_per_round"] == pytest.approx(1.0)
        assert (
            breakdown["machine transitions"]["calls_per_round"]
            >= 2 * (fig["rounds"] - 1) / fig["rounds"]
        )
    assert result["results"]["fsync"]["median_us"] > 0


def test_pause_latency_quick() -> None:
    result = pause_latency.run(quick=True)
    assert_shape(result, "pause_latency")
    figures = result["results"]
    n = pause_latency.QUICK_SAMPLES
    assert_latency(figures["streaming"]["pause"], n)
    assert_latency(figures["tool"]["pause"], n)
    assert figures["streaming"]["all_paused"] and figures["tool"]["all_paused"]
    # Every pause interrupted a running bash and said so in its result.
    assert figures["tool"]["interrupted_results"] == n
    assert figures["leftover_sleep_processes"] == 0


def test_fanout_quick() -> None:
    result = fanout.run(quick=True)
    assert_shape(result, "fanout")
    figures = result["results"]
    assert figures["pod_only"]["deltas"] == fanout.QUICK_DELTAS
    assert list(figures["by_clients"]) == [str(n) for n in fanout.CLIENTS]
    for n, fig in figures["by_clients"].items():
        assert fig["all_clients_complete"]
        assert fig["deltas_per_client"] == [fanout.QUICK_DELTAS] * int(n)
        assert fig["per_client_events_per_s_median"] > 0
        assert fig["total_events_per_s_median"] >= fig["per_client_events_per_s_min"]


def test_startup_quick() -> None:
    result = startup.run(quick=True)
    assert_shape(result, "startup")
    figures = result["results"]
    for key in ("python_bare", "import_cli_main", "pod_help", "pod_run_help", "import_anthropic"):
        assert figures[key]["runs"] == startup.QUICK_RUNS
        assert figures[key]["median_ms"] > 0
    for key in ("modules_after_import", "modules_after_help", "modules_after_run_help"):
        assert set(figures[key]) == set(startup.HEAVY)
    runs = figures["pod_run"]
    for key in ("cold_first_request", "warm_load_first_request", "warm_live_first_request"):
        assert runs[key]["runs"] == startup.QUICK_RUNS
        assert 0 < runs[key]["min_ms"] <= runs[key]["max_ms"]
    # Each run reached the fake API (warm-ups included) and asked it once: "hello" needs no tool.
    assert runs["requests_seen"] == 3 * startup.QUICK_RUNS + 2
    assert runs["cold_total"]["min_ms"] > runs["cold_first_request"]["min_ms"]
    assert figures["slowest_imports"] and figures["slowest_imports"][0]["cumulative_ms"] > 0


def test_memory_quick() -> None:
    result = memory.run(quick=True)
    assert_shape(result, "memory")
    figures = result["results"]
    assert figures["tracemalloc"]["items"] == memory.QUICK_ITEMS
    assert figures["tracemalloc"]["history_bytes"] > 0
    assert figures["tracemalloc"]["wire_bytes"] > 0
    assert figures["session"]["loaded_items"] == memory.QUICK_ITEMS
    assert figures["session"]["session_load_ms"] > 0


def test_reload_quick() -> None:
    result = reload.run(quick=True)
    assert_shape(result, "reload")
    (n,) = reload.QUICK_SIZES
    figures = result["results"][str(n)]
    assert figures["items"] == n
    assert figures["history_reply_bytes"] > figures["session_file_bytes"] // 2
    for key in ("load", "reload", "reload_cpu", "reload_off_loop"):
        assert_latency(figures[key], reload.QUICK_SAMPLES)
    assert figures["reload"]["p50_ms"] >= figures["load"]["p50_ms"]


def test_session_writes_quick() -> None:
    result = session_writes.run(quick=True)
    assert_shape(result, "session_writes")
    on_loop, threaded = result["results"]["on_loop"], result["results"]["writer_threads"]
    # On the loop every record is a sync of its own (4 a round); the writer threads group the
    # result with the note, and the tool's start with the message before it when they meet.
    assert on_loop["syncs_per_round"] == 4
    assert 1 <= threaded["syncs_per_round"] < on_loop["syncs_per_round"]
    for figures in (on_loop, threaded):
        assert figures["loop_late_ms"]["n"] > 0


def test_context_quick() -> None:
    result = context.run(quick=True)
    assert_shape(result, "context")
    refs, prune = result["results"]["file_refs"], result["results"]["pruning"]
    assert refs["resolved"] == context.REFS
    assert refs["attached_chars"] >= context.REFS * context.REF_BYTES
    assert_latency(refs, 5)
    assert prune["items"] == context.QUICK_ITEMS
    assert prune["prune_before_turn"] > 0 and prune["pruned_results"] > 0
    assert_latency(prune["full_build"], 5)
    assert_latency(prune["incremental_build"], 5)


def test_context_economy_quick() -> None:
    result = context_economy.run(quick=True)
    assert_shape(result, "context_economy")
    figures = result["results"]
    for cache in (figures["cache"], figures["cache_long_session"]):
        assert 0 < cache["hit_ratio"] <= cache["best_hit_ratio"] + 1e-9
        assert cache["input_cost_vs_uncached"] < 1
    assert figures["window"]["refused_400"] == 0
    assert figures["window"]["run_end"] == {"finished": figures["window"]["turns"]}
    assert figures["compaction"]["build_ms_median"] > 0


def test_fs_read_quick() -> None:
    result = fs_read.run(quick=True)
    assert_shape(result, "fs_read")
    figures = result["results"]
    keys = ["bare_open_read", "read_text_walk", "read_text_via_symlink"]
    if figures["openat2_available"]:
        keys.append("read_text_openat2")
    for key in keys:
        assert_latency(figures[key], fs_read.QUICK_READS)
    assert_latency(figures["write_text"], fs_read.QUICK_WRITES)


def test_checkpoint_quick() -> None:
    result = checkpoint.run(quick=True)
    assert_shape(result, "checkpoint")
    figures = result["results"]
    for n in checkpoint.QUICK_SIZES:
        fig = figures["snapshots"][str(n)]
        assert fig["files"] == n and fig["first_snapshot_ms"] > 0
        assert_latency(fig["snapshot_5_changed"], checkpoint.QUICK_ROUNDS)
        assert fig["measured_bytes"] > 0
    restore = figures["restore"]
    assert restore["changed"] == checkpoint.QUICK_RESTORE_FILES
    assert_latency(restore["restore"], checkpoint.QUICK_RESTORE_REPEATS)
    space = figures["disk"]
    assert space["checkpoints"] == checkpoint.QUICK_DISK_CHECKPOINTS
    assert space["after_checkpoints_bytes"] > space["after_first_bytes"] > 0


@pytest.mark.slow
def test_host_quick() -> None:
    from bench import host

    result = host.run(quick=True)
    assert_shape(result, "host")
    figures = result["results"]
    assert figures["first_delta"]["n"] == host.QUICK["concurrent"]
    assert figures["pss_mib"] > figures["pss_mib_empty"] > 0
    assert figures["per_round_ms_host"] > 0 and figures["per_round_ms_process"] > 0


def test_pressure_quick() -> None:
    from bench import pressure

    result = pressure.run(quick=True)
    assert_shape(result, "pressure")
    figures = result["results"]
    assert figures["turn_result"] == "finished"
    assert figures["tool_result"].endswith("exit 0"), figures["tool_result"]
    assert figures["history_reply_mb"] > 1
    # The bound is the point of the benchmark, and memory does not depend on the machine's
    # speed; the latency does, so it is only reported (and must have been measured).
    assert figures["within_bound"], figures
    assert figures["get_status"]["n"] > 0


def test_hooks_quick() -> None:
    from bench import hooks

    result = hooks.run(quick=True)
    assert_shape(result, "hooks")
    figures = result["results"]
    assert {"none", "true", "python"} <= set(figures)
    assert figures["none"]["per_call_overhead_ms"] == 0
    assert all(f["turn_median_ms"] > 0 for f in figures.values())
    assert len(result["table"]) == len(figures) - 1


def test_sandbox_quick() -> None:
    from bench import sandbox

    result = sandbox.run(quick=True)
    assert_shape(result, "sandbox")
    figures = result["results"]
    if not figures["available"]:
        pytest.skip(f"no sandbox here: {figures['why']}")
    for label in ("true", "ls -R"):
        assert_latency(figures[label]["plain"], sandbox.QUICK_RUNS)
        assert_latency(figures[label]["sandboxed"], sandbox.QUICK_RUNS)
    proxy = figures["proxy"]
    assert_latency(proxy["start"]["behind_the_bridge"], sandbox.QUICK_RUNS)
    assert_latency(proxy["request"]["through_the_proxy"], sandbox.QUICK_RUNS * 4)
    assert {r["metric"] for r in result["table"]} >= {
        "proxy: bridge start (true)",
        "proxy: one HTTP request",
    }


def test_peers_quick() -> None:
    result = peers.run(quick=True)
    assert_shape(result, "peers")
    per_round = result["results"]["per_round"]
    for name in ("ours", "langgraph", "langgraph_checkpointer", "pydantic_ai"):
        fig = per_round[name]
        if not fig["available"]:
            assert fig["reason"], f"{name} unavailable without a reason"
            continue
        for h in peers.HISTORIES:
            assert fig[f"history_{h}_ms_per_round"] > 0
            assert len(fig["samples_ms"][str(h)]) == peers.QUICK_REPEATS
    assert per_round["ours"]["available"]
    pauses = result["results"]["pause_resume"]
    assert_latency(pauses["ours"]["pause_to_control"], peers.QUICK_PAUSE_SAMPLES)
    assert_latency(pauses["ours"]["resume_to_model"], peers.QUICK_PAUSE_SAMPLES)


def test_subpods_quick() -> None:
    result = subpods.run(quick=True)
    assert_shape(result, "subpods")
    figures = result["results"]
    latency = figures["task_to_first_request"]
    assert_latency(latency["from_tool_call_done"], subpods.QUICK_TASKS)
    assert latency["from_tool_call_start"]["min_ms"] >= latency["from_tool_call_done"]["min_ms"]
    rounds = figures["rounds"]
    for pod in ("child", "plain"):
        # R rounds of read_file, then the answer: R intervals between R + 1 requests.
        assert rounds[pod]["rounds"] == subpods.QUICK_ROUNDS
        assert rounds[pod]["fake"]["min_ms"] > 0
        assert rounds[pod]["round"]["min_ms"] > rounds[pod]["pod"]["min_ms"] > 0
    pause = figures["pause"]
    assert_latency(pause["all_children_paused"], subpods.QUICK_PAUSES)
    memory = figures["memory"]
    assert len(memory["children"]) == subpods.CHILDREN
    assert all(m["pod_kib"] and m["supervisor_kib"] for m in memory["children"])
    assert memory["with_pod_host_kib"] is None and "pod host" in memory["with_pod_host_reason"]
    assert figures["invalid_requests"] == 0
    assert figures["leftover_processes"] == 0


# -- the runner ---------------------------------------------------------------------------------------


def test_each_module_prints_one_json_object() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench.context", "--quick"],
        capture_output=True,
        cwd=REPO,
        timeout=120,
        check=True,
    )
    lines = done.stdout.decode().strip().splitlines()
    assert len(lines) == 1
    assert json.loads(lines[0])["benchmark"] == "context"


def test_main_runs_a_subset_and_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "latest.json"
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--only", "memory,context", "--out", str(out)],
        capture_output=True,
        cwd=REPO,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    summary = json.loads(out.read_text())
    assert list(summary["benchmarks"]) == ["memory", "context"]
    assert summary["failed"] == []
    assert "memory" in done.stdout.decode() and "context" in done.stdout.decode()


def test_benchmark_list_matches_modules() -> None:
    modules = {p.stem for p in (REPO / "bench").glob("*.py") if not p.stem.startswith("_")}
    assert set(BENCHMARKS) | set(STANDALONE) == modules


def test_http_quick() -> None:
    from bench import http

    result = http.run(quick=True)
    assert_shape(result, "http")
    figures = result["results"]
    expected = http.QUICK["clients"] * http.QUICK["deltas"]
    # Every delta of every stream arrived, and each was matched with its socket twin.
    assert figures["deltas_received"] == figures["deltas_expected"] == expected
    assert figures["delta_delay"]["n"] == expected
    assert figures["host_kib_streaming"]["rss"] > 0
    assert figures["run_ms_socket"] > 0 and figures["run_ms_http"] > 0
