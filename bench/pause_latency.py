"""Pause latency over the real socket: ``pause`` sent → ``run_end: paused`` received.

A pod is served in this process on a real Unix socket (as ``pod serve`` does) with the
scripted provider; a protocol client on the same event loop drives it. Two situations:

* streaming: the provider streams an endless reply in 4-character chunks, 2 ms apart; the
  client waits for a delta plus a random 2–10 ms, pauses, waits for ``run_end``, resumes.
* tool: every model reply is a ``bash`` call running ``sleep 60`` (``allow_bash``); the
  client waits until the command has run for 30–60 ms, pauses (the pod kills the process
  group and commits a truthful interrupted result), waits for ``run_end``, resumes.

Each sample is one pause of a running turn; resume → first ``text_delta`` (streaming) and
resume → ``executing_tools`` (tool) are reported too. After the run, no ``sleep`` started by
the benchmark may be left alive (checked through a marker in the children's environment).

    python -m bench.pause_latency [--quick]
"""

from __future__ import annotations

import asyncio
import os
import random
import time
import uuid
from pathlib import Path
from typing import Any

from bench._common import (
    Result,
    bench_config,
    latency_stats,
    main_for,
    row,
    scratch_workspace,
    served_pod,
)

NAME = "pause_latency"
SAMPLES = 100
SAMPLES_TOOL = 60
QUICK_SAMPLES = 5
TARGET_STREAM_P99_MS = 20.0
TARGET_TOOL_P99_MS = 100.0
_MARK_VAR = "POD_BENCH_MARK"


async def _streaming(root: Path, samples: int) -> dict[str, Any]:
    from orchestrator.adapters.providers.scripted import ScriptedProvider, ScriptedReply
    from orchestrator.serving.client import PodClient

    endless = ScriptedReply(text="lorem ipsum " * 50_000, chunk_size=4, chunk_delay_s=0.002)
    provider = ScriptedProvider(responder=lambda request: endless)
    config = bench_config(root, session=root / "pause-stream.jsonl")
    socket = root / "s.sock"
    pauses: list[float] = []
    resumes: list[float] = []
    results: list[str] = []
    async with served_pod(config, provider, socket):
        client = await PodClient.connect(socket)
        try:
            await client.send("run", {"input": "tell me a long story"})
            for i in range(samples):
                if i:
                    start = time.perf_counter()
                    await client.send("resume")
                    await client.wait_for("text_delta")
                    resumes.append(time.perf_counter() - start)
                else:
                    await client.wait_for("text_delta")
                await asyncio.sleep(random.uniform(0.002, 0.010))
                start = time.perf_counter()
                await client.send("pause")
                end = await client.wait_for("run_end")
                pauses.append(time.perf_counter() - start)
                results.append(str(end.data.get("result")))
        finally:
            await client.close()
    return {
        "pause": latency_stats(pauses),
        "resume_to_first_delta": latency_stats(resumes) if resumes else None,
        "all_paused": all(r == "paused" for r in results),
        "requests": len(provider.requests),
    }


async def _tool(root: Path, samples: int) -> dict[str, Any]:
    from orchestrator.adapters.providers.scripted import (
        ScriptedProvider,
        ScriptedReply,
        ScriptedToolCall,
    )
    from orchestrator.serving.client import PodClient

    call = ScriptedReply(
        text="Running it.",
        tool_calls=[ScriptedToolCall(name="bash", input={"command": "sleep 60"})],
    )
    provider = ScriptedProvider(responder=lambda request: call)
    config = bench_config(root, session=root / "pause-tool.jsonl", allow_bash=True)
    socket = root / "t.sock"
    pauses: list[float] = []
    resumes: list[float] = []
    results: list[str] = []
    interrupted_results = 0
    async with served_pod(config, provider, socket):
        client = await PodClient.connect(socket)
        try:
            await client.send("run", {"input": "run the slow command"})
            for i in range(samples):
                start = time.perf_counter()
                if i:
                    await client.send("resume")
                # The command runs again: a new call when the pause closed the old one, or
                # the same call when the pause came before it started (on a busy machine the
                # pause can land between the call's announcement and its start), which
                # announces no new call. Either way the pod says it is executing tools.
                await client.wait_for("status", state="executing_tools")
                if i:
                    resumes.append(time.perf_counter() - start)
                await asyncio.sleep(random.uniform(0.030, 0.060))
                start = time.perf_counter()
                await client.send("pause")
                seen = []
                while True:
                    event = await client.next_event(timeout=10)
                    if event is None:
                        raise RuntimeError("the pod closed the connection")
                    seen.append(event)
                    if event.event == "run_end":
                        break
                pauses.append(time.perf_counter() - start)
                results.append(str(seen[-1].data.get("result")))
                interrupted_results += sum(
                    1
                    for e in seen
                    if e.event == "tool_result" and "Interrupted" in str(e.data.get("summary"))
                )
        finally:
            await client.close()
    return {
        "pause": latency_stats(pauses),
        "resume_to_tool_call": latency_stats(resumes) if resumes else None,
        "all_paused": all(r == "paused" for r in results),
        "interrupted_results": interrupted_results,
        "requests": len(provider.requests),
    }


def _leftover_children(mark: str) -> int:
    """Live processes whose environment carries this run's marker (should be none)."""
    needle = f"{_MARK_VAR}={mark}".encode()
    me = os.getpid()
    count = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            environ = (entry / "environ").read_bytes()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0") and b"sleep" in cmdline:
            count += 1
    return count


async def _both(root: Path, samples: int, tool_samples: int) -> dict[str, Any]:
    streaming = await _streaming(root, samples)
    tool = await _tool(root, tool_samples)
    return {"streaming": streaming, "tool": tool}


def run(quick: bool = False) -> Result:
    """The benchmark; ``quick`` takes a handful of samples."""
    samples = QUICK_SAMPLES if quick else SAMPLES
    tool_samples = QUICK_SAMPLES if quick else SAMPLES_TOOL
    mark = uuid.uuid4().hex
    os.environ[_MARK_VAR] = mark
    try:
        with scratch_workspace() as root:
            figures = asyncio.run(_both(root, samples, tool_samples))
        deadline = time.monotonic() + 2.0
        leftover = _leftover_children(mark)
        while leftover and time.monotonic() < deadline:
            time.sleep(0.1)
            leftover = _leftover_children(mark)
    finally:
        os.environ.pop(_MARK_VAR, None)
    figures["leftover_sleep_processes"] = leftover
    stream, tool = figures["streaming"]["pause"], figures["tool"]["pause"]
    table = [
        row("streaming: pause→run_end p50", stream["p50_ms"], "ms"),
        row("streaming: pause→run_end p95", stream["p95_ms"], "ms"),
        row(
            "streaming: pause→run_end p99",
            stream["p99_ms"],
            "ms",
            target=f"< {TARGET_STREAM_P99_MS:g} ms",
            met=stream["p99_ms"] < TARGET_STREAM_P99_MS,
        ),
        row("tool (sleep 60): pause→run_end p50", tool["p50_ms"], "ms"),
        row("tool (sleep 60): pause→run_end p95", tool["p95_ms"], "ms"),
        row(
            "tool (sleep 60): pause→run_end p99",
            tool["p99_ms"],
            "ms",
            target=f"< {TARGET_TOOL_P99_MS:g} ms",
            met=tool["p99_ms"] < TARGET_TOOL_P99_MS,
        ),
    ]
    resume = figures["streaming"]["resume_to_first_delta"]
    if resume:
        table.append(row("streaming: resume→first delta p50", resume["p50_ms"], "ms"))
    table.append(row("leftover sleep processes", leftover, "", target="0", met=leftover == 0))
    return {
        "benchmark": NAME,
        "quick": quick,
        "params": {"samples_streaming": samples, "samples_tool": tool_samples},
        "results": figures,
        "table": table,
    }


def main() -> None:
    """Print the result as JSON."""
    main_for(run, __doc__ or NAME)


if __name__ == "__main__":
    main()
