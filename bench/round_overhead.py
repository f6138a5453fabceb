"""Orchestrator overhead per round, in process, with the scripted provider and no delays.

A real controller (``build_pod``: config, scoped file system, tool runner, session file with
fsync, lifecycle machine) gets a preloaded history of N items, then runs one turn of R model
requests: R-1 rounds that call a trivial in-process tool (``noop``) and a final text round.
The turn's wall time divided by R is the per-round cost; nothing is subtracted.

A second, instrumented pass splits that time into exclusive buckets: wire build (incl. the
prune bound), the turn's validator, the scripted provider's own validator (it checks every
request like the API would), lifecycle machine transitions, session writes (fsync), event
encoding/broadcast, and everything else (turn loop, asyncio, provider streaming, stamping).

    python -m bench.round_overhead [--quick] [--profile]
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench._common import (
    NoopTool,
    Result,
    TableRow,
    bench_config,
    fsync_cost,
    history_items,
    main_for,
    median,
    ratio,
    row,
    scratch_workspace,
)
from orchestrator.runtime.controller import conversation

NAME = "round_overhead"
SIZES = (10, 1_000, 10_000)
QUICK_SIZES = (10, 100, 1_000)
ROUNDS = 50
REPEATS = 7
REPEATS_LARGE = 3
"""Turns measured per size; sizes above 1,000 items use REPEATS_LARGE (each turn is slow)."""

# bench/README.md, Reference figures: the faster peer per round (LangGraph without a
# checkpointer) at history 0 / 1,000.
PEER_BASELINE_MS = {0: 1.1, 1_000: 2.0}
TARGET_MS_AT_1000 = 1.0

_RUN_LINE = json.dumps({"method": "run", "params": {"segments": [{"kind": "text", "text": "go"}]}})


class Buckets:
    """Exclusive wall time per wrapped function (a parent does not count its children)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: Counter[str] = Counter()
        self._stack: list[float] = []

    def wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        """A synchronous wrapper that books ``fn``'s exclusive time under ``name``."""

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            self._stack.append(0.0)
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                elapsed = time.perf_counter() - start
                children = self._stack.pop()
                self.seconds[name] += elapsed - children
                self.calls[name] += 1
                if self._stack:
                    self._stack[-1] += elapsed

        return wrapper


class OverheadPod:
    """A built pod with a noop tool and a resettable preloaded history."""

    def __init__(
        self,
        root: Path,
        history: int,
        rounds: int,
        *,
        session_dir: Path | None = None,
        thinking: bool = False,
    ) -> None:
        from orchestrator.adapters.providers.scripted import ScriptedProvider
        from orchestrator.protocol import parse_request
        from orchestrator.serving.pod import build_pod

        self.rounds = rounds
        self.items = history_items(history)
        self.provider = ScriptedProvider()
        self.provider.window = 100_000_000  # the 10,000-item history is past any real window
        self.thinking = thinking
        if thinking:
            from orchestrator.core.thinking import ModelThinking

            # A model that takes adaptive thinking: every reply thinks, signed, and redacted.
            self.provider.thinking = ModelThinking("scripted-demo", adaptive=True)
        self.run_ends: list[str] = []
        session = (session_dir or root) / f"round-{history}-{id(self)}.jsonl"
        # A window no history here fills: this measures rounds, not compaction (which
        # bench/context_economy.py measures).
        config = bench_config(
            root, session=session, max_rounds=rounds + 5, context_window=100_000_000
        )
        self.pod = build_pod(config, broadcast=self._sink, provider=self.provider)
        self.controller = self.pod.controller
        self.controller.tools.registry.register(NoopTool())
        _, self.params = parse_request(_RUN_LINE)

    def close(self) -> None:
        """Close the session file."""
        self.controller.transcript.session.close()

    def _sink(self, line: bytes) -> None:
        if line.startswith(b'{"event": "run_end"'):
            self.run_ends.append(json.loads(line)["data"]["result"])

    def reset(self) -> None:
        """Give the controller the preloaded history again and queue one turn's replies."""
        from orchestrator.adapters.providers.scripted import ScriptedReply, ScriptedToolCall
        from orchestrator.core.history import History
        from orchestrator.runtime.context import Context

        history = History(list(self.items))
        c = self.controller
        c.history = c.transcript.history = history
        c.context = c.compactor.context = Context(config=c.config, history=history)
        thinking = THOUGHT if self.thinking else None
        redacted = [REDACTED] if self.thinking else []
        tool_round = ScriptedReply(
            tool_calls=[ScriptedToolCall(name="noop")],
            thinking=thinking,
            redacted_thinking=redacted,
        )
        last = ScriptedReply(text="done", thinking=thinking, redacted_thinking=redacted)
        self.provider.replies = [tool_round] * (self.rounds - 1) + [last]
        self.provider.requests.clear()

    async def turn(self) -> float:
        """Run one turn; its wall time in seconds."""
        self.reset()
        ends = len(self.run_ends)
        start = time.perf_counter()
        self.pod.methods.handle("run", self.params, None, _drop)
        await self.controller.wait_idle()
        elapsed = time.perf_counter() - start
        if self.run_ends[ends:] != ["finished"] or len(self.provider.requests) != self.rounds:
            raise RuntimeError(
                f"turn did not finish as scripted: {self.run_ends[ends:]}, "
                f"{len(self.provider.requests)} requests"
            )
        return elapsed

    def instrument(self) -> Buckets:
        """Wrap the hot functions (instance attributes and module globals) with timers."""
        b = Buckets()
        c = self.controller
        targets: list[tuple[object, str, str]] = [
            (conversation, "wire_messages", "wire build"),
            (c.validator, "validate", "validator (turn)"),
            (self.provider._validator, "validate", "validator (scripted provider)"),
            (c.machine, "send", "machine transitions"),
            (c.transcript.session, "_write", "session write+fsync"),
            (c, "emit", "emit (encode+broadcast)"),
        ]
        for owner, attr, label in targets:
            setattr(owner, attr, b.wrap(label, getattr(owner, attr)))
        return b


def _uninstrument() -> None:
    """Nothing global is patched any more: the wrapped validators belong to one pod."""


def _drop(line: bytes) -> None:
    """Direct replies of the in-process ``run`` (none expected)."""


THOUGHT = "I should call the tool, then check what it returned before answering. " * 12
"""A thinking block of a realistic size (~0.9 KB)."""
REDACTED = "RXh0ZW5kZWQgdGhpbmtpbmcsIGVuY3J5cHRlZA" * 10
"""An opaque redacted block (~0.4 KB)."""


async def measure(
    root: Path, history: int, rounds: int, repeats: int, *, thinking: bool = False
) -> dict[str, Any]:
    """Per-round figures for one history size: plain passes, then one instrumented pass."""
    pod = OverheadPod(root, history, rounds, thinking=thinking)
    await pod.turn()  # warm-up: imports, caches, first fsyncs
    turns = [await pod.turn() for _ in range(repeats)]
    per_round = [t / rounds * 1000 for t in turns]
    buckets = pod.instrument()
    try:
        instrumented = await pod.turn()
    finally:
        _uninstrument()
    breakdown = {
        name: {
            "ms_per_round": seconds / rounds * 1000,
            "calls_per_round": buckets.calls[name] / rounds,
        }
        for name, seconds in sorted(buckets.seconds.items())
    }
    accounted = sum(buckets.seconds.values())
    breakdown["other (loop, asyncio, provider, tools)"] = {
        "ms_per_round": (instrumented - accounted) / rounds * 1000,
        "calls_per_round": 0.0,
    }
    pod.close()
    return {
        "history_items": history,
        "rounds": rounds,
        "turns_measured": len(turns),
        "ms_per_round_median": median(per_round),
        "ms_per_round_min": min(per_round),
        "ms_per_round_samples": per_round,
        "instrumented_ms_per_round": instrumented / rounds * 1000,
        "breakdown": breakdown,
    }


async def measure_all(
    sizes: tuple[int, ...], rounds: int, repeats: int, root: Path
) -> dict[str, Any]:
    """Figures for each history size."""
    out: dict[str, Any] = {}
    for n in sizes:
        reps = repeats if n <= 1_000 else min(repeats, REPEATS_LARGE)
        fig = await measure(root, n, rounds, reps)
        provider_check = fig["breakdown"].get("validator (scripted provider)", {})
        fig["ms_per_round_without_scripted_validator"] = fig["ms_per_round_median"] - (
            provider_check.get("ms_per_round", 0.0)
        )
        out[str(n)] = fig
    return out


def thinking_bytes() -> dict[str, int]:
    """Session-file bytes a thinking block and a redacted block add to an assistant message."""
    from orchestrator.core.history import (
        AssistantMessage,
        RedactedThinkingBlock,
        TextBlock,
        ThinkingBlock,
        item_to_json,
    )

    def size(*blocks: Any) -> int:
        line = json.dumps(
            {"type": "item", "item": item_to_json(AssistantMessage(blocks=[*blocks]))}
        )
        return len(line.encode())

    text = TextBlock(text="done")
    signature = "S" * 344  # real signatures are ~350 base64 characters
    plain = size(text)
    return {
        "thinking_text_bytes": len(THOUGHT.encode()),
        "thinking_block_bytes": size(ThinkingBlock(thinking=THOUGHT, signature=signature), text)
        - plain,
        "redacted_data_bytes": len(REDACTED.encode()),
        "redacted_block_bytes": size(RedactedThinkingBlock(data=REDACTED), text) - plain,
    }


def run(quick: bool = False) -> Result:
    """The benchmark; ``quick`` uses small sizes and one repeat."""
    sizes = QUICK_SIZES if quick else SIZES
    rounds = 6 if quick else ROUNDS
    repeats = 1 if quick else REPEATS
    with scratch_workspace() as root:
        fsync = fsync_cost(root, n=20 if quick else 100)
        by_size = asyncio.run(measure_all(sizes, rounds, repeats, root))
        thinking_at = sizes[1]
        with_thinking = asyncio.run(measure(root, thinking_at, rounds, repeats, thinking=True))
    session_bytes = thinking_bytes()
    small, mid, big = (by_size[str(n)]["ms_per_round_median"] for n in sizes)
    growth = big / mid if mid > 0 else None
    mid_runtime = by_size[str(sizes[1])]["ms_per_round_without_scripted_validator"]
    size_ratio = sizes[2] / sizes[1]
    table: list[TableRow] = []
    for n in sizes:
        fig = by_size[str(n)]
        target = f"< {TARGET_MS_AT_1000:g} ms" if n == 1_000 else None
        table.append(
            row(
                f"ms/round @ {n:,} items",
                fig["ms_per_round_median"],
                "ms",
                target=target,
                met=(fig["ms_per_round_median"] < TARGET_MS_AT_1000) if target else None,
            )
        )
    table.append(
        row(
            f"ms/round @ {sizes[1]:,} w/o scripted provider's validator",
            mid_runtime,
            "ms",
            note="the real provider does not validate; the turn still does",
        )
    )
    table.append(row("write+fsync of one line (session dir)", fsync["median_us"] / 1000, "ms"))
    table.append(
        row(
            f"growth {sizes[1]:,}→{sizes[2]:,} items",
            growth,
            "x",
            target=f"≤ {size_ratio:g}x (linear)",
            met=growth is not None and growth <= size_ratio,
        )
    )
    vs_peer = {}
    for peer_size, size in ((0, sizes[0]), (1_000, 1_000)):
        if str(size) not in by_size:
            continue
        r = ratio(by_size[str(size)]["ms_per_round_median"], PEER_BASELINE_MS[peer_size])
        vs_peer[str(size)] = r
        table.append(
            row(
                f"ours/faster peer (reference) @ {size:,}",
                r,
                "x",
                target="≤ 0.5",
                met=r is not None and r <= 0.5,
                note=f"peer {PEER_BASELINE_MS[peer_size]} ms (bench/README.md reference, LangGraph)",
            )
        )
    off = by_size[str(thinking_at)]["ms_per_round_median"]
    on = with_thinking["ms_per_round_median"]
    table.append(
        row(
            f"ms/round @ {thinking_at:,} items, thinking on",
            on,
            "ms",
            note="every reply: a signed thinking block and a redacted one",
        )
    )
    table.append(
        row(
            f"thinking on / off @ {thinking_at:,}",
            on / off if off else None,
            "x",
            target="≤ 1.1",
            met=off > 0 and on / off <= 1.1,
        )
    )
    table.append(
        row(
            "session bytes per thinking block (0.9 KB text, 344-char signature)",
            session_bytes["thinking_block_bytes"],
            "B",
        )
    )
    table.append(
        row("session bytes per redacted block", session_bytes["redacted_block_bytes"], "B")
    )
    for name, fig in by_size[str(sizes[1])]["breakdown"].items():
        table.append(row(f"  @{sizes[1]:,}: {name}", fig["ms_per_round"], "ms"))
    for name in ("wire build", "validator (turn)", "validator (scripted provider)"):
        fig = by_size[str(sizes[2])]["breakdown"].get(name)
        if fig is not None:
            table.append(row(f"  @{sizes[2]:,}: {name}", fig["ms_per_round"], "ms"))
    return {
        "benchmark": NAME,
        "quick": quick,
        "params": {"sizes": list(sizes), "rounds": rounds, "repeats": repeats},
        "results": {
            "by_history": by_size,
            "growth_ratio": growth,
            "size_ratio": size_ratio,
            "small_ms_per_round": small,
            "fsync": fsync,
            "vs_facts_peer": vs_peer,
            "thinking_on": with_thinking,
            "thinking_session_bytes": session_bytes,
        },
        "table": table,
    }


def main() -> None:
    """Print the result as JSON."""
    main_for(run, __doc__ or NAME)


if __name__ == "__main__":
    main()
