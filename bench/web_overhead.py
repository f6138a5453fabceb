"""The pod's work per round with the API's server tools on, against the same rounds without.

Two in-process pods (``build_pod``: the real Anthropic provider and SDK, config, session file
with fsync, lifecycle machine, a trivial ``noop`` tool) talk over HTTP to the project's fake
Messages API (:class:`conformance.fake_api.FakeAnthropic`, streaming). Each turn is R requests:

* **off**: ``[web] search = "off"``; R-1 rounds whose reply says a line and calls ``noop``,
  then a text round;
* **on**: ``[web] search = "on"`` (every request declares ``web_search`` and ``web_fetch``);
  the same rounds, each reply opening with a search (a ``server_tool_use``, its result with
  two pages and ``encrypted_content``) and citing it, and every fourth request a server loop
  that stops with ``pause_turn`` and is continued at once (a continuation is a round).

The pod's work in a turn is its wall time minus the time the fake spent on each request
(``answered_s - received_s``: reading, validating, planning and writing its answer, all in the
fake's own threads), divided by R. The two pods run their turns alternately, so the machine's
load falls on both alike; the figure is the median over turns. The bar: on / off ≤ 1.1. What
the "on" pod does more is the pod's whole handling of the server tools: declaring them,
parsing the server blocks and citations off the stream, keeping them byte for byte in history
and the session file, sending them back in every later request, and continuing ``pause_turn``.

    python -m bench.web_overhead [--quick]
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

from bench._common import (
    NoopTool,
    Result,
    bench_config,
    main_for,
    median,
    row,
    scratch_workspace,
)

NAME = "web_overhead"
ROUNDS = 24
TURNS = 9
TARGET = 1.1
_RUN_LINE = json.dumps({"method": "run", "params": {"segments": [{"kind": "text", "text": "go"}]}})


def _drop(line: bytes) -> None:
    """Direct replies of the in-process ``run`` (none expected)."""


class WebPod:
    """One pod against its own fake, with server tools on or off."""

    def __init__(self, root: Path, *, web: bool, rounds: int) -> None:
        from conformance.fake_api import FakeAnthropic
        from orchestrator.adapters.providers.anthropic import AnthropicProvider
        from orchestrator.config.web import WebConfig
        from orchestrator.protocol import parse_request
        from orchestrator.serving.pod import build_pod

        self.web = web
        self.rounds = rounds
        self.fake = FakeAnthropic().start()
        self.fake.responder = self._respond
        self.provider = AnthropicProvider(
            "fake-model", api_key="bench", base_url=self.fake.base_url, retry_base_delay_s=0.01
        )
        name = "on" if web else "off"
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
        _, self.params = parse_request(_RUN_LINE)
        self._answered = 0

    def _sink(self, line: bytes) -> None:
        if line.startswith(b'{"event": "run_end"'):
            self.run_ends.append(json.loads(line)["data"]["result"])

    def _respond(self, body: dict[str, Any]) -> Any:
        from conformance.fake_api import Reply, ServerCall, ToolCall

        self._answered += 1
        n = self._answered
        last = n % self.rounds == 0
        if self.web and not last and n % 4 == 1:
            return Reply(server_calls=[ServerCall()], stop_reason="pause_turn")
        searches = [ServerCall(input={"query": f"round {n}"})] if self.web else []
        if last:
            return Reply(text="Done, as the sources say.", server_calls=searches)
        return Reply(
            text="Checking one thing.", server_calls=searches, tool_calls=[ToolCall("noop")]
        )

    async def turn(self) -> float:
        """Run one turn; the pod's own time in it (the fake's time taken out), in seconds."""
        before = len(self.fake.requests)
        ends = len(self.run_ends)
        start = time.perf_counter()
        self.pod.methods.handle("run", self.params, None, _drop)
        await self.controller.wait_idle()
        wall = time.perf_counter() - start
        requests = self.fake.requests[before:]
        if self.run_ends[ends:] != ["finished"] or len(requests) != self.rounds:
            raise RuntimeError(
                f"turn did not finish as scripted: {self.run_ends[ends:]}, {len(requests)} "
                f"requests, refused: {[r.error for r in requests if not r.valid]}"
            )
        if not all(r.valid for r in requests):
            raise RuntimeError(f"the fake refused: {[r.error for r in requests if not r.valid]}")
        fake = sum((r.answered_s or r.received_s) - r.received_s for r in requests)
        return wall - fake

    async def close(self) -> None:
        """Close the session file, the provider's client and the fake."""
        self.controller.transcript.session.close()
        await self.provider.aclose()
        self.fake.stop()


async def measure(root: Path, rounds: int, turns: int) -> dict[str, Any]:
    """Per-round pod time, off and on, over ``turns`` alternating turns each (one warm-up)."""
    off = WebPod(root, web=False, rounds=rounds)
    on = WebPod(root, web=True, rounds=rounds)
    try:
        await off.turn()
        await on.turn()
        samples: dict[str, list[float]] = {"off": [], "on": []}
        for _ in range(turns):
            samples["off"].append(await off.turn() / rounds * 1000)
            samples["on"].append(await on.turn() / rounds * 1000)
        searched = sum(
            1
            for r in on.fake.requests
            if any(t.get("type", "").startswith("web_search_") for t in r.body.get("tools", []))
        )
    finally:
        await off.close()
        await on.close()
    return {
        "rounds": rounds,
        "turns": turns,
        "off_ms_per_round": median(samples["off"]),
        "on_ms_per_round": median(samples["on"]),
        "samples_ms": samples,
        "on_requests_declaring_web_search": searched,
    }


def run(quick: bool = False) -> Result:
    """The benchmark; ``quick``: fewer rounds and turns."""
    rounds = 8 if quick else ROUNDS
    turns = 2 if quick else TURNS
    with scratch_workspace() as root:
        figures = asyncio.run(measure(root, rounds, turns))
    off, on = figures["off_ms_per_round"], figures["on_ms_per_round"]
    ratio = on / off if off > 0 else None
    table = [
        row("pod ms/round, server tools off", off, "ms"),
        row(
            "pod ms/round, server tools on",
            on,
            "ms",
            note="a search + cited text every reply, pause_turn every 4th request",
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
        "results": {**figures, "ratio": ratio},
        "table": table,
    }


def main() -> None:
    """Print the result as JSON."""
    main_for(run, __doc__ or NAME)


if __name__ == "__main__":
    main()
