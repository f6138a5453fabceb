"""What a hook costs a tool call: turns of R ``read_file`` rounds through a real pod (scripted
provider, real socket, session with fsync), with no hook and with one ``PreToolUse`` hook:
``true``, a Python script that reads the event's JSON, and ``true`` in the sandbox (where one
can be made). The overhead per call is the difference of the median turn times over R.

    python -m bench.hooks [--quick]
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from bench._common import Result, bench_config, main_for, median, row, scratch_workspace, served_pod

NAME = "hooks"
ROUNDS = 20
QUICK_ROUNDS = 4
REPEATS = 7
QUICK_REPEATS = 2

PYTHON_HOOK = """\
import json, sys
event = json.load(sys.stdin)
if event["tool_name"] == "Bash" and "rm " in event["tool_input"].get("command", ""):
    print("no rm", file=sys.stderr)
    sys.exit(2)
"""


def _replies(rounds: int) -> list[Any]:
    from orchestrator.adapters.providers.scripted import ScriptedReply, ScriptedToolCall

    call = ScriptedToolCall(name="read_file", input={"path": "README.md"})
    return [ScriptedReply(tool_calls=[call]) for _ in range(rounds)] + [ScriptedReply(text="ok")]


async def _turn_s(root: Path, hooks: dict[str, Any], sandbox: str, rounds: int, n: int) -> float:
    """One turn's wall time in a fresh pod."""
    from orchestrator.adapters.providers.scripted import ScriptedProvider
    from orchestrator.serving.client import PodClient

    config = bench_config(
        root,
        session=root / f"s{n}.jsonl",
        hooks=hooks,
        sandbox={"mode": sandbox},
        checkpoints=False,
        permissions={"mode": "accept-edits"},
    )
    socket = root / f"p{n}.sock"
    async with served_pod(config, ScriptedProvider(replies=_replies(rounds)), socket):
        client = await PodClient.connect(socket)
        loop = asyncio.get_running_loop()
        started = loop.time()
        await client.send("run", {"input": "go"})
        async for event in client.events():
            if event.event == "run_end":
                break
        took = loop.time() - started
        await client.close()
    return took


def _hook(command: str, sandboxed: bool = False) -> dict[str, Any]:
    return {"PreToolUse": [{"hooks": [{"command": command, "sandbox": sandboxed}]}]}


def run(quick: bool = False) -> Result:
    """The benchmark; ``quick`` takes a short turn, twice."""
    from orchestrator.adapters.sandbox.bwrap import SandboxUnavailable, find_bwrap

    rounds = QUICK_ROUNDS if quick else ROUNDS
    repeats = QUICK_REPEATS if quick else REPEATS
    with scratch_workspace("pbh") as root:
        script = root / "hook.py"
        script.write_text(PYTHON_HOOK)
        variants: dict[str, tuple[dict[str, Any], str]] = {
            "none": ({}, "off"),
            "true": (_hook("true"), "off"),
            "python": (_hook(f"{sys.executable} -I -S {script}"), "off"),
        }
        try:
            find_bwrap()
            variants["true, sandboxed"] = (_hook("true", sandboxed=True), "on")
        except SandboxUnavailable:
            pass
        times: dict[str, list[float]] = {label: [] for label in variants}
        n = 0
        for _ in range(repeats):  # interleaved: every variant sees the same machine load
            for label, (hooks, sandbox) in variants.items():
                n += 1
                times[label].append(asyncio.run(_turn_s(root, hooks, sandbox, rounds, n)))
    base = median(times["none"])
    results: dict[str, Any] = {
        label: {
            "turn_median_ms": median(samples) * 1000,
            "per_call_overhead_ms": (median(samples) - base) / rounds * 1000,
        }
        for label, samples in times.items()
    }
    table = [
        row(f"hook overhead per tool call: {label}", figures["per_call_overhead_ms"], "ms")
        for label, figures in results.items()
        if label != "none"
    ]
    return {
        "benchmark": NAME,
        "quick": quick,
        "params": {"rounds": rounds, "repeats": repeats},
        "results": results,
        "table": table,
    }


def main() -> None:
    """Print the result as JSON."""
    main_for(run, __doc__ or NAME)


if __name__ == "__main__":
    main()
