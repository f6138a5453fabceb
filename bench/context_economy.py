"""Context economy: prompt-cache hit ratio, turns sustained under a small window, compaction cost.

Every figure comes from the pod on the real ``anthropic`` SDK talking HTTP to the project's
fake Messages API, which applies the real API's prompt-cache accounting and context limits.

* **Cache**: a multi-turn tool session (reading files); the share of input tokens read from
  the cache, the input cost relative to sending everything uncached, and the best any
  placement could do on the same requests (each request reading the longest prefix it shares
  with an earlier one, when that prefix is long enough to cache).
* **Window**: turns of file reads under a 60k-token window: turns and rounds that finished,
  compactions made, requests the API refused (must be 0).
* **Compaction cost** (in process, no model call): building a compaction request and
  committing one at 10,000 history items; RSS after 10 compactions.
* **Long histories** (issue 29): planning a compaction (the cut, on the event loop) and
  shrinking the summary request (in a thread) at 2,000, 10,000 and 30,000 turns; then a pod
  loaded from an uncompacted session of that many turns, far over its window: time from
  ``run`` to ``run_end``, and how long ``get_status`` waited meanwhile (polled throughout).
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import resource
import time
from pathlib import Path
from typing import Any

from bench._common import Result, main_for, median, row, scratch_workspace

NAME = "context_economy"
PRICE_READ, PRICE_WRITE = 0.1, 1.25
"""Cost of a cache read and a (5-minute) cache write, relative to an uncached input token."""


def _files(ws: Path, n: int, size: int) -> None:
    for k in range(1, n + 1):
        line = f"file {k}: " + "lorem ipsum dolor sit amet " * 3 + "\n"
        (ws / f"f{k}.txt").write_text(line * max(1, size // len(line)))


def _responder(files_per_turn: int) -> Any:
    from conformance.fake_api import Reply, ToolCall
    from orchestrator.runtime.compaction import COMPACTION_PROMPT

    header = COMPACTION_PROMPT.split("]")[0] + "]"
    state = {"read": 0, "turn_reads": 0}

    def respond(body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]["content"]
        if isinstance(last, list) and str(last[-1].get("text", "")).startswith(header):
            return Reply(text="Summary: files were read one per round; continue with the next.")
        if isinstance(last, list) and last and last[0].get("type") != "tool_result":
            state["turn_reads"] = 0
        if state["turn_reads"] < files_per_turn:
            state["turn_reads"] += 1
            state["read"] += 1
            path = f"f{(state['read'] - 1) % 40 + 1}.txt"
            return Reply(tool_calls=[ToolCall("read_file", {"path": path})])
        return Reply(text="Done with this turn's files.")

    return respond


async def _session(
    ws: Path, sock: Path, *, turns: int, reads: int, window: int
) -> tuple[list[Any], dict[str, int], int]:
    """Run ``turns`` turns against a fake with ``window``; requests, finished counts, rounds."""
    from bench._common import bench_config, served_pod
    from conformance.fake_api import FakeAnthropic
    from conformance.models import ModelSpec
    from orchestrator.adapters.providers.anthropic import AnthropicProvider
    from orchestrator.serving.client import PodClient

    fake = FakeAnthropic(models=[ModelSpec(id="fake-model", context_window=window)]).start()
    fake.responder = _responder(reads)
    provider = AnthropicProvider("fake-model", api_key="bench", base_url=fake.base_url)
    ends: dict[str, int] = {}
    try:
        config = bench_config(
            sock.parent,
            model="fake-model",
            max_rounds=reads + 5,
            session=sock.with_suffix(".jsonl"),  # a fresh session per run: fake ids restart
        )
        async with served_pod(config, provider, sock):
            client = await PodClient.connect(sock)
            for n in range(turns):
                await client.send("run", {"input": f"turn {n}: read the next files"})
                event = await client.wait_for("run_end", timeout=120)
                result = str(event.data["result"])
                ends[result] = ends.get(result, 0) + 1
            await client.close()
        await provider.aclose()
        requests = [r for r in fake.requests if r.path == "/v1/messages"]
    finally:
        fake.stop()
    return requests, ends, sum(1 for r in requests if r.status == 200)


def cache_figures(requests: list[Any], min_cacheable: int = 1024) -> dict[str, float]:
    """Measured hit ratio and cost, and the best placement's, over the same request bodies.

    The best placement reads, for each request, the longest prefix it shares with any earlier
    request (when that prefix is long enough to be cached) and writes the rest.
    """
    from conformance.tokens import prompt_blocks

    read = created = fresh = 0
    best_read = total = 0
    cached: set[str] = set()
    for request in requests:
        blocks = prompt_blocks(request.body)
        running = 0
        shared = 0
        for block in blocks:
            running += block.tokens
            if block.prefix_hash in cached:
                shared = running
        total += running
        best_read += shared if shared >= min_cacheable else 0
        cached.update(block.prefix_hash for block in blocks)
        usage = request.usage or {}
        read += usage.get("cache_read_input_tokens", 0)
        created += usage.get("cache_creation_input_tokens", 0)
        fresh += usage.get("input_tokens", 0)
    measured = read + created + fresh
    hit = read / measured if measured else 0.0
    best = best_read / total if total else 0.0
    return {
        "hit_ratio": hit,
        "input_cost_vs_uncached": (fresh + PRICE_WRITE * created + PRICE_READ * read) / measured,
        "best_hit_ratio": best,
        "best_input_cost_vs_uncached": ((total - best_read) * PRICE_WRITE + PRICE_READ * best_read)
        / total,
        "hit_vs_best": hit / best if best else 0.0,
        "requests": len(requests),
        "input_tokens": measured,
    }


def compaction_cost(items: int, compactions: int) -> dict[str, float]:
    """Building a compaction request and committing one (no model call), in process."""
    import tempfile

    from bench._common import history_items
    from orchestrator.adapters.session import SessionWriter
    from orchestrator.config.model import PodConfig
    from orchestrator.core.history import Compaction, History
    from orchestrator.runtime.compaction import plan_compaction, summary_request_messages
    from orchestrator.runtime.context import Context
    from orchestrator.runtime.transcript import Transcript

    root = Path(tempfile.mkdtemp(prefix="pce"))
    history = History(history_items(items))
    config = PodConfig(workspace=root, context_window=10_000_000)
    context = Context(config=config, history=history)
    writer = SessionWriter(root / "s.jsonl", pod="bench", workspace=root)
    transcript = Transcript(history=history, session=writer, broadcast=lambda line: None)
    messages = context.messages()
    context.estimate("system", [], messages)  # the request before: the view is built and sized
    build: list[float] = []
    commit: list[float] = []
    rss: list[int] = []
    for _ in range(compactions):
        start = time.perf_counter()
        body = context.body()
        view_messages = context.messages()
        before = context.estimate("system", [], view_messages)
        plan = plan_compaction(body, keep_tokens=2_000)
        assert plan is not None
        summary_request_messages(view_messages, focus=None)
        build.append(time.perf_counter() - start)
        start = time.perf_counter()
        transcript.commit(
            Compaction(
                summary="s" * 2000,
                first_seq=plan.first_seq,
                last_seq=plan.last_seq,
                tokens_before=before,
                tokens_after=before // 10,
            )
        )
        context.messages()  # the next request's view starts at the new summary
        commit.append(time.perf_counter() - start)
        for item in history_items(200):  # more work before the next compaction
            transcript.commit(item)
        gc.collect()
        rss.append(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    writer.close()
    return {
        "items": items,
        "build_ms_median": median(build) * 1000,
        "build_ms_first": build[0] * 1000,
        "commit_ms_median": median(commit) * 1000,
        "compactions": compactions,
        "max_rss_mib_after": rss[-1] / 1024,
    }


def planning_cost(turns: int) -> dict[str, float]:
    """Planning a compaction of an uncompacted history of ``turns`` turns (6 items each)."""
    from bench._common import history_items
    from orchestrator.config.model import PodConfig
    from orchestrator.core.history import History
    from orchestrator.runtime.compaction import plan_compaction, reduced_messages
    from orchestrator.runtime.context import Context

    history = History(history_items(turns * 6))
    context = Context(
        config=PodConfig(workspace=Path("."), context_window=200_000), history=history
    )
    start = time.perf_counter()
    plan = plan_compaction(context.body(), keep_tokens=20_000)
    planned = time.perf_counter()
    assert plan is not None
    reduced_messages(plan.summarised, budget=160_000)
    shrunk = time.perf_counter()
    return {
        "turns": turns,
        "items": len(history.items),
        "plan_ms": (planned - start) * 1000,
        "shrink_request_ms_in_thread": (shrunk - planned) * 1000,
    }


async def _long_session(root: Path, turns: int) -> dict[str, float]:
    """``pod serve`` (its own process, as users run it) on an uncompacted session far over
    its window: one ``run``, with ``get_status`` polled from another process until the
    turn ends."""
    import subprocess
    import sys

    from bench._common import history_items, write_session
    from orchestrator.serving.client import PodClient
    from orchestrator.serving.server import socket_is_live

    ws = root / "ws"
    session = root / f"long-{turns}.jsonl"
    write_session(session, history_items(turns * 6), workspace=ws)
    socket = root / f"long-{turns}.sock"
    script = root / "script.json"
    script.write_text(json.dumps({"replies": [{"text": "Carrying on from the summary."}]}))
    args = [
        sys.executable, "-m", "cli", "serve", "--workspace", str(ws), "--socket", str(socket),
        "--session", str(session), "--provider", "scripted", "--script", str(script),
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env["XDG_STATE_HOME"] = str(root / "state")
    started = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        while not socket_is_live(socket):
            if proc.poll() is not None:
                raise RuntimeError(f"pod serve exited with {proc.returncode}")
            await asyncio.sleep(0.02)
        ready = time.perf_counter() - started
        client = await PodClient.connect(socket)
        waits: list[float] = []
        states: list[str] = []
        sent = time.perf_counter()
        await client.send("run", {"input": "where were we?"})
        while not states or states[-1] != "idle":
            asked = time.perf_counter()
            status = await client.request("get_status")
            waits.append(time.perf_counter() - asked)
            states.append(status.data["state"])
            await asyncio.sleep(0.002)
        took = time.perf_counter() - sent
        await client.send("shutdown")
        await client.close()
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    return {
        "turns": turns,
        "session_mib": session.stat().st_size / 2**20,
        "load_s": ready,
        "run_to_idle_s": took,
        "status_polls": len(waits),
        "status_wait_ms_max": max(waits) * 1000,
        "status_wait_ms_median": median(waits) * 1000,
        "compacted": "summarizing" in states,
    }


def run(quick: bool = False) -> Result:
    """The benchmark; ``quick`` runs a short session and a small history."""
    turns, reads = (2, 3) if quick else (3, 5)
    with scratch_workspace("pce") as root:
        ws = root / "ws"
        _files(ws, 40, 12_000)
        requests, _, _ = asyncio.run(
            _session(ws, root / "c.sock", turns=turns, reads=reads, window=200_000)
        )
        cache = cache_figures(requests)
        long_turns = 3 if quick else 8
        requests_l, _, _ = asyncio.run(
            _session(ws, root / "l.sock", turns=long_turns, reads=reads, window=200_000)
        )
        long_cache = cache_figures(requests_l)
        window_turns = 3 if quick else 12
        requests_w, ends, _ = asyncio.run(
            _session(ws, root / "w.sock", turns=window_turns, reads=8, window=60_000)
        )
    refused = sum(1 for r in requests_w if r.status == 400)
    compactions = sum(1 for r in requests_w if r.status == 200 and _is_summary(r.body))
    rounds = sum(1 for r in requests_w if r.status == 200 and not _is_summary(r.body))
    cost = compaction_cost(1_000 if quick else 10_000, 3 if quick else 10)
    sizes = (2_000, 10_000) if quick else (2_000, 10_000, 30_000)
    planning = [planning_cost(n) for n in sizes]
    with scratch_workspace("pcl") as root:
        (root / "ws").mkdir(exist_ok=True)
        long_sessions = [asyncio.run(_long_session(root, n)) for n in sizes]
    figures = {
        "cache": cache,
        "cache_long_session": long_cache,
        "window": {
            "window_tokens": 60_000,
            "turns": window_turns,
            "run_end": ends,
            "rounds": rounds,
            "compactions": compactions,
            "refused_400": refused,
        },
        "compaction": cost,
        "long_history_planning": planning,
        "long_sessions": long_sessions,
    }
    table = [
        row(f"cache reads / input, {turns} turns × {reads} rounds", 100 * cache["hit_ratio"], "%"),
        row("  best placement on the same requests", 100 * cache["best_hit_ratio"], "%"),
        row(
            f"cache reads / input, {long_turns} turns × {reads} rounds",
            100 * long_cache["hit_ratio"],
            "%",
            target="≥ 90 %",
            met=long_cache["hit_ratio"] >= 0.9,
        ),
        row("  best placement on the same requests", 100 * long_cache["best_hit_ratio"], "%"),
        row(
            "hit ratio vs best placement (worse of the two)",
            min(cache["hit_vs_best"], long_cache["hit_vs_best"]),
            "×",
            target="≥ 0.95",
            met=min(cache["hit_vs_best"], long_cache["hit_vs_best"]) >= 0.95,
        ),
        row("input cost vs uncached", cache["input_cost_vs_uncached"], "×"),
        row("turns finished under a 60k window", ends.get("finished", 0), "turns"),
        row("rounds under a 60k window", rounds, "requests"),
        row("compactions under a 60k window", compactions, "count"),
        row("requests refused (prompt too long)", refused, "count", target="0", met=refused == 0),
        row(
            f"build a compaction request at {cost['items']:,} items",
            cost["build_ms_median"],
            "ms",
            target="< 5 ms",
            met=cost["build_ms_median"] < 5,
        ),
        row("commit a compaction", cost["commit_ms_median"], "ms"),
        *(
            row(
                f"plan a compaction at {p['turns']:,} turns",
                p["plan_ms"],
                "ms",
                target="≤ 50 ms",
                met=p["plan_ms"] <= 50,
            )
            for p in planning
        ),
        *(
            row(
                f"get_status wait while {s['turns']:,} loaded turns compact",
                s["status_wait_ms_max"],
                "ms (max)",
                target="≤ 20 ms",
                met=s["status_wait_ms_max"] <= 20,
            )
            for s in long_sessions
        ),
        row(f"max RSS after {cost['compactions']} compactions", cost["max_rss_mib_after"], "MiB"),
    ]
    return {
        "benchmark": NAME,
        "quick": quick,
        "params": {
            "turns": turns,
            "long_turns": long_turns,
            "reads_per_turn": reads,
            "window_turns": window_turns,
        },
        "results": figures,
        "table": table,
    }


def _is_summary(body: dict[str, Any]) -> bool:
    from orchestrator.runtime.compaction import COMPACTION_PROMPT

    last = body["messages"][-1]["content"]
    header = COMPACTION_PROMPT.split("]")[0] + "]"
    return isinstance(last, list) and str(last[-1].get("text", "")).startswith(header)


def main() -> None:
    """Print the result as JSON."""
    main_for(run, __doc__ or NAME)


if __name__ == "__main__":
    main()
