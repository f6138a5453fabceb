"""kill -9 a real ``pod serve`` at random points, restart it with ``--continue``, check nothing is lost.

Usage: ``python -m bench.kill9 --turns 100 --seed 7 [--thinking] [--web]``

A ``pod serve`` subprocess runs the scripted provider (``--script``: replies that stream
slowly and call ``bash sleep``), ``--allow-bash`` and a fixed ``--session``. Turns are run one
after another; at random points (right after ``run``, mid-stream, mid-tool, between rounds,
right after ``run_end``) the pod gets SIGKILL and is restarted with ``--continue``. After every
restart:

* every item ``get_history`` showed before the kill is still there (same seq, same content),
  and ``get_history`` equals what the session file holds;
* the status is ``paused`` exactly when the session was cut off mid-turn, else ``idle``;
* a cut-off turn is continued (``resume``) or replaced (``run``) and must finish: the scripted
  provider rejects invalid requests like the API, so ``finished`` proves the request was valid;
* a kill in the middle of a compaction leaves it whole or absent (no torn line, nothing lost);
* every bash command logs its call id when it runs: at the end no id is in the log twice (a
  command killed mid-run is closed as crashed, never run again by Resume). The log is in the
  workspace, the one place a sandboxed command can write; a run whose bash calls have results
  but whose log counted no execution measured nothing, and fails (exit 1, the reason in
  ``problems``).

The scripted provider appends a line per request it receives to a request log (``request_log``
in the script): the requests it refused like the API (must be 0) are counted from there.

``--thinking`` runs the pod with ``--thinking adaptive``: every scripted reply then thinks (a
signed ``thinking`` block) and carries a ``redacted_thinking`` block, the provider refuses a
request whose thinking came back changed, and the offline wire check applies the thinking
rule. The request log gives the thinking blocks sent back (the ``thinking`` and
``redacted_thinking`` blocks in the assistant messages of the requests the provider accepted,
summed over requests) and the requests that did not turn thinking on; with ``--thinking`` a
run with any of the latter, or with nothing sent back, is a problem.

``--web`` draws the API's own tools into the replies (:mod:`bench._kill9_web`): ``pause_turn``
server loops, searches and fetches with cited text, and server calls left open beside bash
calls, with a kill point inside the loop (``mid_server_loop``); the summary adds what the final
session keeps of them (``web``), and a run in which none survived is a problem.

Prints one JSON line: turns, kills, items checked, lost (must be 0), invalid requests (must
be 0), bash calls with a result, executions and commands that ran twice (must be 0), calls
closed as crashed, requests
and thinking blocks sent back, elapsed seconds, and what happened where.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench._kill9_web import add_server_tools, count_server_blocks  # noqa: E402
from orchestrator.adapters.session import load_session  # noqa: E402
from orchestrator.core.history import (  # noqa: E402
    ToolResult,
    UserMessage,
    item_from_json,
    item_to_json,
)
from orchestrator.core.repair import close_orphans, interrupt_note  # noqa: E402
from orchestrator.core.segments import TextSegment  # noqa: E402
from orchestrator.core.validator import validate_wire  # noqa: E402
from orchestrator.core.wire import to_wire  # noqa: E402
from orchestrator.serving.client import PodClient, PodEvent  # noqa: E402
from orchestrator.serving.server import socket_is_live  # noqa: E402

KILL_POINTS = (
    "none",
    "right_after_run",
    "mid_stream",
    "mid_tool",
    "between_rounds",
    "after_run",
    "mid_compaction",
    "mid_server_loop",
)
WEIGHTS = (4, 1, 2, 2, 1, 1, 2, 0)
WEB_WEIGHTS = (4, 1, 2, 2, 1, 1, 2, 3)
"""With ``--web``: kills inside a server loop too."""


class Kill9:
    """One benchmark run: a workspace, a session file and a pod process that keeps dying."""

    def __init__(self, root: Path, seed: int, *, thinking: bool = False, web: bool = False) -> None:
        self.root = root
        self.rng = random.Random(seed)
        self.thinking = thinking
        """Run with thinking on: every reply thinks and carries a redacted block."""
        self.web = web
        """Replies draw web search and fetch: pause_turn loops, citations, the mixed case."""
        self.ws = root / "ws"
        (self.ws / "src").mkdir(parents=True)
        (self.ws / "README.md").write_text("# kill9\n\nA tiny project.\n")
        (self.ws / "src" / "app.py").write_text("def main():\n    return 42\n")
        # A small window: long runs also compact on their own.
        (self.ws / ".pod").mkdir()
        (self.ws / ".pod" / "config.toml").write_text("context_window = 20000\n")
        self.session = root / "session.jsonl"
        self.socket = root / "p.sock"
        self.script = root / "script.json"
        self.stderr_path = root / "pod.stderr"
        # In the workspace: the sandbox hides the rest of /tmp, where this root lies, and a
        # log written outside would count nothing.
        self.executions = self.ws / "executions.log"
        self.request_log = root / "requests.jsonl"
        self.generation = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.stats: Counter[str] = Counter()
        self.points: Counter[str] = Counter()
        self.problems: list[str] = []
        self.web_counts: dict[str, int] = {}
        """What the final session keeps of the server tools (:func:`count_server_blocks`)."""
        self.uncounted = False
        """Bash calls ran, and none was counted: the run measured nothing (it fails)."""

    # -- the pod process -----------------------------------------------------------------------

    def _write_script(self) -> None:
        """Fresh replies for the next process: slow text, alternating with bash-sleep rounds."""
        self.generation += 1
        rng = self.rng
        replies: list[dict[str, Any]] = []
        for n in range(400):
            text = " ".join(rng.choice(["alpha", "beta", "gamma", "delta"]) for _ in range(30))
            reply: dict[str, Any] = {"text": text, "chunk_size": 4, "chunk_delay_s": 0.01}
            if self.thinking:
                # Distinct per reply and process: a signature is derived from the text.
                reply["thinking"] = f"g{self.generation} reply {n}: " + text[:30]
                reply["redacted_thinking"] = [f"opaque g{self.generation} {n}"]
            if n % 2 == 0 and rng.random() < 0.7:
                reply["text"] = "let me run something " + text[:40]
                reply["tool_calls"] = [
                    {
                        "name": "bash",
                        # Ids unique across processes: the provider's own counter restarts.
                        "id": f"toolu_g{self.generation}_{n}_{k}",
                        # Each command logs its id: the log counts executions, not items.
                        "input": {
                            "command": f"echo step {k}; "
                            f"echo toolu_g{self.generation}_{n}_{k} >> {self.executions}; "
                            f"sleep {rng.uniform(0.2, 0.6):.2f}"
                        },
                    }
                    for k in range(rng.randint(1, 2))
                ]
            if self.web:
                reply = add_server_tools(reply, rng, f"g{self.generation}_{n}", pause=n == 0)
            replies.append(reply)
        # Summaries stream slowly, so a kill can land in the middle of a compaction.
        script = {
            "replies": replies,
            "summary_delay_s": 0.01,
            "request_log": str(self.request_log),
        }
        self.script.write_text(json.dumps(script))

    def start(self, *, continue_: bool) -> None:
        self._write_script()
        args = [
            sys.executable, "-m", "cli", "serve",
            "--workspace", str(self.ws),
            "--socket", str(self.socket),
            "--session", str(self.session),
            "--provider", "scripted",
            "--script", str(self.script),
            "--allow-bash",
            "--name", "kill9",
        ]  # fmt: skip
        if continue_:
            args.append("--continue")
        if self.thinking:
            args += ["--thinking", "adaptive"]
        stderr = self.stderr_path.open("ab")
        env = {**os.environ, "XDG_STATE_HOME": str(self.root / "state")}
        env.pop("ANTHROPIC_API_KEY", None)
        self.proc = subprocess.Popen(
            args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=stderr, env=env
        )
        stderr.close()
        deadline = time.monotonic() + 30
        while not socket_is_live(self.socket):
            if self.proc.poll() is not None:
                raise RuntimeError(f"pod exited: {self.stderr_path.read_text()[-2000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError("pod did not start")
            time.sleep(0.02)

    def kill(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)
        self.stats["kills"] += 1

    # -- checks ------------------------------------------------------------------------------

    def _session_items(self) -> list[dict[str, Any]]:
        loaded = load_session(self.session)
        return [json.loads(json.dumps(item_to_json(i))) for i in loaded.items]

    def _check_prefix(self, before: list[dict[str, Any]], after: list[dict[str, Any]]) -> None:
        self.stats["items_checked"] += len(before)
        lost = sum(1 for a, b in zip(before, after, strict=False) if a != b)
        lost += max(0, len(before) - len(after))
        if lost:
            self.stats["lost"] += lost
            self.problems.append(f"{lost} item(s) lost or changed after restart")

    def _check_wire(self, items: list[dict[str, Any]], *, paused: bool) -> None:
        """The request the next run would send is valid (repairs applied as run applies them)."""
        parsed = [item_from_json(i) for i in items]
        extra: list[Any] = [*close_orphans(parsed), interrupt_note()] if paused else []
        extra.append(UserMessage(segments=[TextSegment(text="next")], text="next"))
        violations = validate_wire(to_wire(parsed + extra), thinking=self.thinking)
        if violations:
            self.stats["invalid_requests"] += 1
            self.problems.append(f"history not wire-valid after restart: {violations[:2]}")

    def _check_end(self, events: list[PodEvent], what: str) -> None:
        end = events[-1].data.get("result")
        self.stats[f"run_end_{end}"] += 1
        for e in events:
            if e.event == "error":
                # A refused request is counted from the provider's request log.
                self.problems.append(f"{what}: error {e.data}")
        if end != "finished":
            self.problems.append(f"{what}: run ended {end}")

    def _count_executions(self, items: list[Any]) -> None:
        """Every command ran at most once; crashed ones say so in their result."""
        ran = self.executions.read_text().split() if self.executions.exists() else []
        counts = Counter(ran)
        self.stats["executions"] = len(ran)
        self.stats["executed_twice"] = sum(1 for n in counts.values() if n > 1)
        if self.stats["executed_twice"]:
            twice = sorted(i for i, n in counts.items() if n > 1)
            self.problems.append(f"commands ran twice: {twice[:5]}")
        self.stats["crash_closed"] = sum(
            1
            for item in items
            if getattr(item, "summary", "").startswith("[Interrupted by a pod crash]")
        )
        # The results the commands themselves gave (not the pod's stand-ins for lost ones).
        self.stats["bash_results"] = sum(
            1
            for item in items
            if isinstance(item, ToolResult)
            and item.call_id.startswith("toolu_g")
            and not item.synthetic
            and not item.summary.startswith("[Interrupted by a pod crash]")
        )
        if self.stats["bash_results"] and not ran:
            self.uncounted = True
            self.problems.append(
                f"{self.stats['bash_results']} bash calls ran but no execution was logged in "
                f"{self.executions}: the commands could not write their log there (a sandbox "
                "hiding it?), so 'executed_twice' measured nothing"
            )

    def _count_requests(self) -> None:
        """What reached the scripted provider, from its request log (a torn last line, from a
        kill in the middle of a write, is skipped)."""
        lines = self.request_log.read_text().splitlines() if self.request_log.exists() else []
        for line in lines:
            try:
                record = json.loads(line)
            except ValueError:
                self.stats["torn_log_lines"] += 1
                continue
            self.stats["requests"] += 1
            if record["refused"] is not None:
                self.stats["invalid_requests"] += 1
                self.problems.append(f"the provider refused a request: {record['refused']}")
                continue
            self.stats["thinking_sent_back"] += record["thinking_sent_back"]
            if not record["thinking"]:
                self.stats["requests_without_thinking"] += 1
        if self.thinking and self.stats["requests_without_thinking"]:
            self.problems.append(
                f"{self.stats['requests_without_thinking']} requests did not turn thinking on"
            )
        if self.thinking and not self.stats["thinking_sent_back"]:
            self.problems.append("thinking was on, but no thinking block was sent back")

    # -- driving ------------------------------------------------------------------------------

    async def _until(
        self, c: PodClient, want: Any, timeout: float = 30.0
    ) -> tuple[bool, list[PodEvent]]:
        """Read events until ``want(event)`` or ``run_end``; (matched, events read)."""
        seen: list[PodEvent] = []
        deadline = time.monotonic() + timeout
        while True:
            got = await c.next_event(timeout=max(0.01, deadline - time.monotonic()))
            if got is None:
                raise RuntimeError("the pod closed the connection")
            seen.append(got)
            if want(got):
                return True, seen
            if got.event == "run_end":
                return False, seen

    async def turn(self, n: int) -> None:
        point = self.rng.choices(KILL_POINTS, WEB_WEIGHTS if self.web else WEIGHTS)[0]
        if self.web and n == 0:
            point = "mid_server_loop"  # every --web run kills inside a server loop at least once
        c = await PodClient.connect(self.socket)
        await c.send("run", {"input": f"turn {n}: do the next step"})
        self.stats["turns"] += 1
        if point == "none":
            _, events = await self._until(c, lambda e: False, timeout=60)
            self._check_end(events, f"turn {n}")
            await c.close()
            return
        reached = True
        if point == "right_after_run":
            await asyncio.sleep(self.rng.uniform(0, 0.01))
        elif point == "mid_stream":
            reached, _ = await self._until(c, lambda e: e.event == "text_delta")
            await asyncio.sleep(self.rng.uniform(0, 0.05))
        elif point == "mid_tool":
            reached, _ = await self._until(
                c, lambda e: e.event == "status" and e.data.get("state") == "executing_tools"
            )
            await asyncio.sleep(self.rng.uniform(0, 0.4))
        elif point == "between_rounds":
            reached, _ = await self._until(
                c, lambda e: e.event == "status" and e.data.get("state") == "executing_tools"
            )
            if reached:
                reached, _ = await self._until(
                    c, lambda e: e.event == "status" and e.data.get("state") == "requesting"
                )
        elif point == "mid_server_loop":
            reached, _ = await self._until(c, lambda e: e.event == "server_tool_call")
            await asyncio.sleep(self.rng.uniform(0, 0.05))
        elif point == "after_run":
            await self._until(c, lambda e: False, timeout=60)
        elif point == "mid_compaction":
            await self._until(c, lambda e: False, timeout=60)
            await c.send("compact")
            reached, _ = await self._until(
                c, lambda e: e.event == "status" and e.data.get("state") == "compacting"
            )
            await asyncio.sleep(self.rng.uniform(0, 0.3))
        before = (await c.request("get_history")).data["items"]
        self.points[point if reached else f"{point}_missed"] += 1
        self.kill()
        await c.close()
        await self.restart(before, n)

    async def restart(self, before: list[dict[str, Any]], n: int) -> None:
        cut_off = load_session(self.session).cut_off
        self.start(continue_=True)
        c = await PodClient.connect(self.socket)
        status = (await c.request("get_status")).data["status"]
        after = (await c.request("get_history")).data["items"]
        self._check_prefix(before, after)
        if after != self._session_items():
            self.stats["lost"] += 1
            self.problems.append("get_history differs from the session file after restart")
        expected = "paused" if cut_off else "idle"
        if status != expected:
            self.stats["wrong_status"] += 1
            self.problems.append(f"turn {n}: status {status} after restart, expected {expected}")
        self._check_wire(after, paused=status == "paused")
        if status == "paused":
            self.stats["restarted_paused"] += 1
            if self.rng.random() < 0.5:
                await c.send("resume")
                self.stats["resumes"] += 1
            else:
                await c.send("run", {"input": f"turn {n}: never mind, next thing"})
                self.stats["runs_after_restart"] += 1
            _, events = await self._until(c, lambda e: False, timeout=60)
            self._check_end(events, f"turn {n} after restart")
        await c.close()

    async def main(self, turns: int) -> None:
        self.start(continue_=False)
        try:
            for n in range(turns):
                await self.turn(n)
            c = await PodClient.connect(self.socket)
            await c.send("shutdown")
            await c.close()
            assert self.proc is not None
            self.proc.wait(30)
            final = load_session(self.session)
            if final.cut_off:
                self.problems.append("the final session is cut off after a clean shutdown")
            items = [json.loads(json.dumps(item_to_json(i))) for i in final.items]
            self._check_wire(items, paused=False)
            self.stats["final_items"] = len(items)
            self.stats["compactions"] = sum(1 for i in items if i["kind"] == "compaction")
            self._count_executions(final.items)
            self._count_requests()
            self.web_counts = count_server_blocks(final.items)
            if self.web and not self.web_counts["server_calls"]:
                self.problems.append("--web: the final session keeps no server tool call")
        finally:
            if self.proc is not None and self.proc.poll() is None:
                self.proc.kill()
                with contextlib.suppress(Exception):
                    self.proc.wait(10)


def run(turns: int, seed: int, *, thinking: bool = False, web: bool = False) -> dict[str, Any]:
    """Run the benchmark and return its summary (``thinking``: with extended thinking on;
    ``web``: with the API's own tools drawn in)."""
    root = Path(tempfile.mkdtemp(prefix="pk"))
    started = time.monotonic()
    bench = Kill9(root, seed, thinking=thinking, web=web)
    try:
        asyncio.run(bench.main(turns))
    finally:
        keep = os.environ.get("POD_KILL9_KEEP")
        if not keep:
            shutil.rmtree(root, ignore_errors=True)
    s = bench.stats
    return {
        "benchmark": "kill9",
        "seed": seed,
        "thinking": thinking,
        "web": bench.web_counts if web else None,
        "turns": s["turns"],
        "kills": s["kills"],
        "items_checked": s["items_checked"],
        "lost": s["lost"],
        "bash_results": s["bash_results"],
        "executions": s["executions"],
        "executed_twice": s["executed_twice"],
        "crash_closed": s["crash_closed"],
        "invalid_requests": s["invalid_requests"],
        "requests": s["requests"],
        "thinking_sent_back": s["thinking_sent_back"],
        "requests_without_thinking": s["requests_without_thinking"],
        "wrong_status": s["wrong_status"],
        "restarted_paused": s["restarted_paused"],
        "resumes": s["resumes"],
        "runs_after_restart": s["runs_after_restart"],
        "run_end": {k[8:]: v for k, v in s.items() if k.startswith("run_end_")},
        "kill_points": dict(bench.points),
        "final_items": s["final_items"],
        "compactions": s["compactions"],
        "problems": bench.problems[:20],
        "elapsed_s": round(time.monotonic() - started, 1),
        "measured_executions": not bench.uncounted,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--thinking",
        action="store_true",
        help="run the pod with thinking on: every reply thinks and has a redacted block",
    )
    parser.add_argument(
        "--web",
        action="store_true",
        help="draw web search and fetch into the replies: pause_turn loops, citations, the "
        "mixed case, and kills inside a server loop",
    )
    args = parser.parse_args(argv)
    result = run(args.turns, args.seed, thinking=args.thinking, web=args.web)
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
    if not result["measured_executions"]:
        raise SystemExit(1)  # the "never run twice" check did not run: the reason is in problems


if __name__ == "__main__":
    main()
