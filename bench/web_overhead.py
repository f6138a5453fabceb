"""The pod's work per round with the API's server tools on, against the same rounds without.

Two in-process pods (``build_pod``: the real Anthropic provider and SDK, config, session file
with fsync, lifecycle machine, a trivial ``noop`` tool), each talking over HTTP to its own fake
Messages API (``python -m conformance.fake_api``, streaming) **in a process of its own**, so that
the CPU time of this process is the pod's work alone. Each turn starts from the same preloaded
history (100 items) and sends R requests:

* **off**: ``[web] search = "off"``; R-1 rounds whose reply says a line and calls ``noop``,
  then a text round;
* **on**: ``[web] search = "on"`` (every request declares ``web_search`` and ``web_fetch``);
  the same rounds, each reply opening with a search (a ``server_tool_use``, its result with
  two pages and ``encrypted_content``, ~1.2 KB) and citing it;
* **pause**: as *on*, and every fourth request a server loop that stops with ``pause_turn``
  (a search, no text) and is continued at once: a continuation is a round, one without a tool.

What *on* does beyond *off* is the pod's handling of the server tools: declaring them, reading
the server blocks and citations off the stream, keeping them byte for byte in the history and
the session file, and sending them back in every later request (which carries their bytes).

The measure is the process CPU time of a turn (``time.process_time``) divided by R: the fake's
work is in its own process, and CPU time does not count the waits a loaded machine adds. The
pods run their turns in turn; each figure is the median over turns. Wall time per round is
reported too. The bar: on / off ≤ 1.1 (pause / off is reported beside it: its continuation
rounds run no tool, so it is cheaper per round than it looks).

An in-process pass does the same without the SDK and HTTP (``bench.round_overhead``'s pod
and scripted provider, which makes the server blocks itself, over a 1,000-item history):
what the orchestrator's own handling of server tools costs per round, on / off. The scripted
provider checks every request the way the API would (its validator, the thinking and encrypted
fields sent back, the server calls left open, each a pass over the whole conversation): that
is the API's work, not the pod's, so its CPU time is taken out, as the fake's is above. Through the
SDK, most of the difference is the SDK's: it deep-copies every request's params before sending
them (``anthropic._utils._prepare``) and builds its models for every streamed block, costs
that grow with the blocks the conversation holds.

    python -m bench.web_overhead [--quick]
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench._common import (
    NoopTool,
    Result,
    bench_config,
    history_items,
    main_for,
    median,
    row,
    scratch_workspace,
)

NAME = "web_overhead"
ROUNDS = 24
TURNS = 9
HISTORY = 100
TARGET = 1.1
_RUN_LINE = json.dumps({"method": "run", "params": {"segments": [{"kind": "text", "text": "go"}]}})
_TEXT = "Checking one thing."


def _drop(line: bytes) -> None:
    """Direct replies of the in-process ``run`` (none expected)."""


def _server_bytes() -> int:
    """The bytes a reply's search and citation add."""
    from conformance.fake_api import Reply, ServerCall
    from conformance.web import plan_server_blocks

    reply = Reply(text=_TEXT, server_calls=[ServerCall(input={"query": "round 1"})])
    plan = plan_server_blocks(reply, declared={"web_search": {}})
    return len(json.dumps(plan.leading + plan.citations))


VARIANTS = ("off", "on", "pause")


def script(variant: str, *, rounds: int, turns: int) -> list[dict[str, Any]]:
    """The fake's steps for ``turns`` turns of ``rounds`` requests (JSON form)."""
    text = _TEXT
    steps: list[dict[str, Any]] = []
    for _ in range(turns):
        for n in range(1, rounds + 1):
            search = [{"input": {"query": f"round {n}"}}] if variant != "off" else []
            if variant == "pause" and n < rounds and n % 4 == 1:
                steps.append({"type": "reply", "server_calls": search, "stop_reason": "pause_turn"})
            elif n == rounds:
                steps.append({"type": "reply", "text": text, "server_calls": search})
            else:
                noop = [{"name": "noop", "input": {}}]
                steps.append(
                    {"type": "reply", "text": text, "server_calls": search, "tool_calls": noop}
                )
    return steps


class WebPod:
    """One pod against its own fake (a subprocess), with server tools on or off."""

    def __init__(self, root: Path, variant: str, *, rounds: int, turns: int) -> None:
        from orchestrator.adapters.providers.anthropic import AnthropicProvider
        from orchestrator.config.web import WebConfig
        from orchestrator.protocol import parse_request
        from orchestrator.serving.pod import build_pod

        name, web = variant, variant != "off"
        self.rounds = rounds
        steps = root / f"script-{name}.json"
        steps.write_text(json.dumps(script(variant, rounds=rounds, turns=turns)))
        self.fake = subprocess.Popen(
            [sys.executable, "-m", "conformance.fake_api", "--script", str(steps)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.fake.stdout is not None
        base_url = self.fake.stdout.readline().strip()
        self.provider = AnthropicProvider(
            "fake-model", api_key="bench", base_url=base_url, retry_base_delay_s=0.01
        )
        settings = WebConfig(search="on", fetch="server") if web else WebConfig(search="off")
        config = bench_config(
            root,
            session=root / f"web-{name}.jsonl",
            max_rounds=rounds + 5,
            context_window=100_000_000,
            web=settings,
        )
        self.run_ends: list[str] = []
        self.pod = build_pod(config, broadcast=self._sink, provider=self.provider)
        self.controller = self.pod.controller
        self.controller.tools.registry.register(NoopTool())
        self.items = history_items(HISTORY)
        _, self.params = parse_request(_RUN_LINE)

    def _sink(self, line: bytes) -> None:
        if line.startswith(b'{"event": "run_end"'):
            self.run_ends.append(json.loads(line)["data"]["result"])

    def _reset(self) -> None:
        """The same preloaded history at the start of every turn (as round_overhead does)."""
        from orchestrator.core.history import History
        from orchestrator.runtime.context import Context

        history = History(list(self.items))
        c = self.controller
        c.history = c.transcript.history = history
        c.context = c.compactor.context = Context(config=c.config, history=history)

    async def turn(self) -> tuple[float, float]:
        """Run one turn: (CPU seconds of this process, wall seconds)."""
        self._reset()
        ends = len(self.run_ends)
        cpu, wall = time.process_time(), time.perf_counter()
        self.pod.methods.handle("run", self.params, None, _drop)
        await self.controller.wait_idle()
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        if self.run_ends[ends:] != ["finished"]:
            raise RuntimeError(f"turn did not finish: {self.run_ends[ends:]}")
        return cpu, wall

    def searched(self) -> int:
        """Server tool calls in the history the last turn left."""
        from orchestrator.core.history import AssistantMessage

        return sum(
            len(item.server_calls)
            for item in self.controller.history.items
            if isinstance(item, AssistantMessage)
        )

    async def close(self) -> None:
        """Close the session file, the provider's client and the fake."""
        self.controller.transcript.session.close()
        await self.provider.aclose()
        self.fake.terminate()
        self.fake.wait(10)


async def measure(root: Path, rounds: int, turns: int) -> dict[str, Any]:
    """Per-round CPU and wall time of each variant over ``turns`` turns taken in turn (after
    one warm-up turn each)."""
    pods = {v: WebPod(root, v, rounds=rounds, turns=turns + 1) for v in VARIANTS}
    cpu: dict[str, list[float]] = {v: [] for v in VARIANTS}
    wall: dict[str, list[float]] = {v: [] for v in VARIANTS}
    try:
        for pod in pods.values():
            await pod.turn()
        for _ in range(turns):
            for name, pod in pods.items():
                spent, took = await pod.turn()
                cpu[name].append(spent / rounds * 1000)
                wall[name].append(took / rounds * 1000)
        searched = {name: pod.searched() for name, pod in pods.items()}
        if searched["off"] or not searched["on"] or not searched["pause"]:
            raise RuntimeError(f"server calls per turn are not as scripted: {searched}")
    finally:
        for pod in pods.values():
            await pod.close()
    out: dict[str, Any] = {"rounds": rounds, "turns": turns, "history_items": HISTORY}
    for name in VARIANTS:
        out[f"{name}_cpu_ms_per_round"] = median(cpu[name])
        out[f"{name}_wall_ms_per_round"] = median(wall[name])
    return out | {
        "cpu_samples_ms": cpu,
        "server_calls_per_turn": searched,
        "server_bytes_per_reply": _server_bytes(),
    }


async def measure_in_process(root: Path, history: int, rounds: int, turns: int) -> dict[str, Any]:
    """Per-round CPU time of ``bench.round_overhead``'s in-process pod (scripted provider, no
    SDK, no HTTP), its replies with and without a search and cited text, turns taken in turn."""
    from bench.round_overhead import OverheadPod
    from orchestrator.adapters.providers.scripted import ScriptedReply, ScriptedToolCall
    from orchestrator.adapters.providers.scripted_web import ScriptedCitation, ScriptedServerCall

    pages = [
        {"url": "https://example.com/a/1", "title": "Result 1 for round"},
        {"url": "https://example.com/a/2", "title": "Result 2 for round"},
    ]
    cited = ScriptedCitation(url=pages[0]["url"], title=pages[0]["title"], cited_text="A line.")

    def replies(web: bool) -> list[ScriptedReply]:
        out = []
        for n in range(1, rounds + 1):
            search = [ScriptedServerCall(input={"query": f"round {n}"}, pages=pages)] if web else []
            tools = [ScriptedToolCall(name="noop")] if n < rounds else []
            out.append(
                ScriptedReply(
                    text=_TEXT,
                    tool_calls=tools,
                    server_calls=search,
                    citations=[cited] if web else [],
                )
            )
        return out

    import orchestrator.adapters.providers.scripted as scripted

    checking = [0.0]

    def clocked(fn: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            start = time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                checking[0] += time.process_time() - start

        return wrapper

    class Pod(OverheadPod):
        web = False

        def reset(self) -> None:
            super().reset()
            self.provider.replies = replies(self.web)

    pods = {"off": Pod(root, history, rounds), "on": Pod(root, history, rounds)}
    pods["on"].web = True
    checks = ("changed_thinking", "changed_server_content", "open_calls_in")
    saved = {name: getattr(scripted, name) for name in checks}
    for name in checks:
        setattr(scripted, name, clocked(saved[name]))
    for pod in pods.values():
        validator = pod.provider._validator
        validator.validate = clocked(validator.validate)  # type: ignore[method-assign]
    cpu: dict[str, list[float]] = {"off": [], "on": []}
    try:
        for pod in pods.values():
            await pod.turn()
        for _ in range(turns):
            for name, pod in pods.items():
                checking[0] = 0.0
                spent = time.process_time()
                await pod.turn()
                own = time.process_time() - spent - checking[0]
                cpu[name].append(own / rounds * 1000)
    finally:
        for name in checks:
            setattr(scripted, name, saved[name])
        for pod in pods.values():
            pod.close()
    off, on = median(cpu["off"]), median(cpu["on"])
    return {
        "history_items": history,
        "rounds": rounds,
        "off_cpu_ms_per_round": off,
        "on_cpu_ms_per_round": on,
        "ratio": on / off if off > 0 else None,
        "cpu_samples_ms": cpu,
    }


def run(quick: bool = False) -> Result:
    """The benchmark; ``quick``: fewer rounds and turns."""
    rounds = 8 if quick else ROUNDS
    turns = 2 if quick else TURNS
    with scratch_workspace() as root:
        figures = asyncio.run(measure(root, rounds, turns))
        inner = asyncio.run(
            measure_in_process(root, 100 if quick else 1_000, 6 if quick else 50, turns * 3)
        )
    off, on = figures["off_cpu_ms_per_round"], figures["on_cpu_ms_per_round"]
    paused = figures["pause_cpu_ms_per_round"]
    ratio = on / off if off > 0 else None
    table = [
        row("pod CPU ms/round, server tools off", off, "ms"),
        row("pod CPU ms/round, server tools on", on, "ms", note="a search + cited text a reply"),
        row(
            "pod CPU ms/round, on with pause_turn",
            paused,
            "ms",
            note="and a pause_turn continued every 4th request",
        ),
        row("wall ms/round, off", figures["off_wall_ms_per_round"], "ms"),
        row("wall ms/round, on", figures["on_wall_ms_per_round"], "ms"),
        row("pause_turn / off", paused / off if off > 0 else None, "x"),
        row(
            f"in process (no SDK, no HTTP) @ {inner['history_items']:,} items: on / off",
            inner["ratio"],
            "x",
            target=f"≤ {TARGET:g}",
            met=inner["ratio"] is not None and inner["ratio"] <= TARGET,
            note=f"{inner['off_cpu_ms_per_round']:.3f} → {inner['on_cpu_ms_per_round']:.3f} ms",
        ),
        row(
            "on / off",
            ratio,
            "x",
            target=f"≤ {TARGET:g}",
            met=ratio is not None and ratio <= TARGET,
        ),
    ]
    return {
        "benchmark": NAME,
        "quick": quick,
        "params": {"rounds": rounds, "turns": turns},
        "results": {
            **figures,
            "ratio": ratio,
            "pause_ratio": paused / off if off > 0 else None,
            "in_process": inner,
        },
        "table": table,
    }


def main() -> None:
    """Print the result as JSON."""
    main_for(run, __doc__ or NAME)


if __name__ == "__main__":
    main()
