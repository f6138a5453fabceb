"""Sub-pods: the cost of delegating a task to a child pod.

A parent pod is served in this process on a real Unix socket with the real Anthropic
provider; its children are real ``pod serve`` processes (under their supervisors), and every
model request of the tree goes to one fake Messages API over HTTP
(:class:`conformance.fake_api.FakeAnthropic`), which timestamps each request as it arrives.
Four measurements:

* **task → child's first request**: one ``task`` call per parent turn, N turns; from the
  moment the client sees the parent's ``tool_call_done`` for ``task`` (the model's reply with
  the call is complete) to the moment the fake receives the child's first request. Most of it
  is starting a Python process; the child's start (``child`` ``starting`` → its first
  state) is reported apart.
* **overhead per child round**: a child does R rounds (a ``read_file`` call each) before it
  answers; the same turn runs in a plain ``pod serve`` (not a child). The fake records when
  each request arrived and when it was done answering it; a round's overhead is the pod's
  part of it, from the fake's answer to the pod's next request (the fake's own time, which
  is reported too, subtracted).
* **pause latency with 4 streaming children**: the parent delegates 4 tasks at once; each
  child streams a long reply; the client sends ``pause`` to the parent and waits until the
  parent's ``child`` events say all 4 are ``paused``. Resumed and paused again, P times.
  The issue's target is p99 ≤ 50 ms: reported, not asserted.
* **memory per child**: PSS (``/proc/PID/smaps_rollup``; RSS from ``/proc/PID/status`` where
  that cannot be read) of each child ``pod serve`` and of its supervisor, while the 4 children
  stream, and of the plain pod for comparison. "With a pod host" is ``null``: there is no
  ``pod host`` yet, every child is a process of its own.

    python -m bench.subpods [--quick]
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from bench._common import (
    Result,
    latency_stats,
    main_for,
    row,
    scratch_workspace,
    served_pod,
)

NAME = "subpods"
TASKS, QUICK_TASKS = 10, 2
ROUNDS, QUICK_ROUNDS = 20, 3
PAUSES, QUICK_PAUSES = 20, 2
CHILDREN = 4
TARGET_PAUSE_P99_MS = 50.0
NO_POD_HOST = "no `pod host` exists yet: every child is a `pod serve` process of its own"

_SLOW = "Streaming on. " * 2_000  # 28,000 characters: about 70 s at 4 characters / 10 ms


def _first_user_text(body: dict[str, Any]) -> str:
    messages = body.get("messages") or []
    if not messages or messages[0].get("role") != "user":
        return ""
    content = messages[0].get("content")
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content or [] if b.get("type") == "text")


def _tool_results(body: dict[str, Any]) -> int:
    return sum(
        1
        for m in body.get("messages") or []
        if m.get("role") == "user" and isinstance(m.get("content"), list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    )


class TreeModel:
    """The fake's answers to the parent, its children and the plain pod; it timestamps every
    request (``time.perf_counter``) by who sent it."""

    def __init__(self, rounds: int) -> None:
        self.rounds = rounds
        self.mode = "answer"
        """What children do: ``answer`` at once, ``rounds`` of ``read_file``, or ``stream``."""
        self.delegate: list[str] = []
        """The prompts of the ``task`` calls the parent's next reply makes."""
        self.arrivals: dict[str, list[float]] = {}
        self._lock = threading.Lock()

    def respond(self, body: dict[str, Any]) -> Any:
        """The step for one request."""
        from conformance.fake_api import Reply, ToolCall

        now = time.perf_counter()
        first = _first_user_text(body)
        if first.startswith("[[bench:"):
            tag = first[: first.index("]]") + 2]
            with self._lock:
                self.arrivals.setdefault(tag, []).append(now)
            if self.mode == "stream" and tag.startswith("[[bench:child"):
                return Reply(text=_SLOW, chunk_size=4, delay_s=0.01)
            rounds = self.mode == "rounds" or tag == "[[bench:plain]]"
            if rounds and _tool_results(body) < self.rounds:
                call = ToolCall(name="read_file", input={"path": "README.md"})
                return Reply(text="Reading.", tool_calls=[call])
            return Reply(text=f"{tag} done.")
        last = body["messages"][-1]
        if isinstance(last.get("content"), list) and any(
            b.get("type") == "tool_result" for b in last["content"]
        ):
            return Reply(text="The children are done.")
        with self._lock:
            prompts, self.delegate = self.delegate, []
        if not prompts:
            return Reply(text="Nothing to delegate.")
        calls = [
            ToolCall(name="task", input={"prompt": p, "name": f"b{i}"})
            for i, p in enumerate(prompts)
        ]
        return Reply(text="Delegating.", tool_calls=calls)


# -- processes -----------------------------------------------------------------------------


def memory_kib(pid: int) -> tuple[int | None, str]:
    """PSS of a process in KiB (from ``smaps_rollup``), else its RSS; and which it is."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]), "pss"
    with contextlib.suppress(OSError, ValueError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]), "rss"
    return None, "unreadable"


def _parent_pid(pid: int) -> int | None:
    with contextlib.suppress(OSError, ValueError):
        text = Path(f"/proc/{pid}/stat").read_text()
        return int(text[text.rindex(")") + 2 :].split()[1])
    return None


def _child_pid(socket: str) -> int | None:
    import json

    from orchestrator.config.paths import pod_info_path

    with contextlib.suppress(OSError, ValueError):
        pid = json.loads(pod_info_path(Path(socket)).read_text()).get("pid")
        return pid if isinstance(pid, int) else None
    return None


def leftover_processes(needle: str) -> int:
    """Live processes (not this one) whose command line names ``needle`` (the scratch
    folder: every pod of the run works in it); there should be none after the run."""
    me = os.getpid()
    count = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        with contextlib.suppress(OSError):
            if needle.encode() in (entry / "cmdline").read_bytes():
                count += 1
    return count


# -- the parent ------------------------------------------------------------------------------


async def _until(check: Any, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        await asyncio.sleep(0.005)


async def _task_latency(client: Any, model: TreeModel, tasks: int) -> dict[str, Any]:
    """One task per turn: tool_call_done → the child's first request at the fake."""
    model.mode = "answer"
    from_done: list[float] = []
    from_start: list[float] = []
    child_start: list[float] = []
    for n in range(tasks):
        tag = f"[[bench:child:latency.{n}]]"
        model.delegate = [f"{tag} Answer at once."]
        await client.send("run", {"input": f"delegate {n}"})
        started = done = None
        starting_at: float | None = None
        came_up_at: float | None = None
        while True:
            event = await client.next_event(timeout=60)
            if event is None:
                raise RuntimeError("the parent closed the connection")
            now = time.perf_counter()
            if event.event == "tool_call_start" and event.data.get("name") == "task":
                started = now
            elif event.event == "tool_call_done" and event.data.get("name") == "task":
                done = now
            elif event.event == "child":
                state = event.data.get("state")
                if state == "starting" and starting_at is None:
                    starting_at = now
                elif state not in ("queued", "starting") and came_up_at is None:
                    came_up_at = now
            elif event.event == "run_end":
                if event.data.get("result") != "finished":
                    raise RuntimeError(f"the delegating turn ended {event.data}")
                break
        first = model.arrivals[tag][0]
        if done is None or started is None:
            raise RuntimeError("the parent announced no task call")
        from_done.append(first - done)
        from_start.append(first - started)
        if starting_at is not None and came_up_at is not None:
            child_start.append(came_up_at - starting_at)
    return {
        "from_tool_call_done": latency_stats(from_done),
        "from_tool_call_start": latency_stats(from_start),
        "child_start": latency_stats(child_start) if child_start else None,
    }


def pod_rounds(requests: list[Any], tag: str) -> dict[str, list[float]]:
    """The rounds of the pod whose task starts with ``tag``, from the fake's records: each
    round from one request's arrival to the next one's (``round``), the fake's own time in it
    (``fake``: arrival to answered) and the pod's (``pod``: answered to the next arrival)."""
    mine = [
        r for r in requests if isinstance(r.body, dict) and _first_user_text(r.body).startswith(tag)
    ]
    out: dict[str, list[float]] = {"round": [], "fake": [], "pod": []}
    for before, after in itertools.pairwise(mine):
        if before.answered_s is None:
            continue
        out["round"].append(after.received_s - before.received_s)
        out["fake"].append(before.answered_s - before.received_s)
        out["pod"].append(after.received_s - before.answered_s)
    return out


async def _child_rounds(client: Any, model: TreeModel) -> str:
    """A child that does ``rounds`` rounds of ``read_file``; the tag of its requests."""
    model.mode = "rounds"
    tag = "[[bench:child:rounds]]"
    model.delegate = [f"{tag} Read README.md a few times."]
    await client.send("run", {"input": "delegate rounds"})
    end = await client.wait_for("run_end", timeout=120)
    if end.data.get("result") != "finished":
        raise RuntimeError(f"the rounds turn ended {end.data}")
    return tag


async def _pauses(client: Any, model: TreeModel, pauses: int) -> dict[str, Any]:
    """4 streaming children; pause → all 4 report paused; resume; again."""
    model.mode = "stream"
    tags = [f"[[bench:child:stream.{i}]]" for i in range(CHILDREN)]
    model.delegate = [f"{tag} Stream a long answer." for tag in tags]

    def streaming(count: int) -> bool:
        return all(len(model.arrivals.get(tag, [])) >= count for tag in tags)

    await client.send("run", {"input": "delegate four"})
    samples: list[float] = []
    to_run_end: list[float] = []
    memory: list[dict[str, Any]] = []
    for n in range(pauses):
        # Every child streams (its request n+1 arrived, and its first delta went out).
        await _until(lambda n=n: streaming(n + 1), 120, "4 children streaming")
        await asyncio.sleep(0.2)
        if n == 0:
            status = await client.status()
            memory = _children_memory([c.socket for c in status.children])
        paused: set[str] = set()
        ended: float | None = None
        start = time.perf_counter()
        await client.send("pause")
        while len(paused) < CHILDREN or ended is None:
            event = await client.next_event(timeout=30)
            if event is None:
                raise RuntimeError("the parent closed the connection")
            if event.event == "child" and event.data.get("state") == "paused":
                paused.add(str(event.data.get("call_id")))
                if len(paused) == CHILDREN:
                    samples.append(time.perf_counter() - start)
            elif event.event == "run_end":
                ended = time.perf_counter() - start
                to_run_end.append(ended)
        if n + 1 < pauses:
            await client.send("resume")
    # A new message to the paused parent closes the calls and stops the children.
    await client.send("run", {"input": "stop"})
    await client.wait_for("run_end", timeout=60)
    return {
        "all_children_paused": latency_stats(samples),
        "parent_run_end_paused": latency_stats(to_run_end),
        "memory": memory,
    }


def _children_memory(sockets: list[str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for socket in sockets:
        pid = _child_pid(socket)
        if pid is None:
            continue
        supervisor = _parent_pid(pid)
        pod_kib, kind = memory_kib(pid)
        sup_kib, sup_kind = memory_kib(supervisor) if supervisor else (None, "unreadable")
        out.append(
            {
                "pid": pid,
                "pod_kib": pod_kib,
                "supervisor_pid": supervisor,
                "supervisor_kib": sup_kib,
                "kind": kind if kind == sup_kind else f"{kind}/{sup_kind}",
            }
        )
    return out


async def _parent_phases(
    root: Path, model: TreeModel, base_url: str, tasks: int, pauses: int
) -> dict[str, Any]:
    from orchestrator.adapters.providers.anthropic import AnthropicProvider
    from orchestrator.config.model import PodConfig
    from orchestrator.serving.client import PodClient

    config = PodConfig.model_validate(
        {
            "workspace": root / "ws",
            "name": "bench",
            "session": root / "parent.jsonl",
            "provider": "anthropic",
            "model": "fake-model",
            "checkpoints": False,
            "permissions": {"mode": "accept-edits"},
        }
    )
    provider = AnthropicProvider(
        "fake-model", api_key="bench-key", base_url=base_url, retry_base_delay_s=0.01
    )
    socket = root / "p.sock"
    async with served_pod(config, provider, socket):
        client = await PodClient.connect(socket)
        try:
            latency = await _task_latency(client, model, tasks)
            child_rounds = await _child_rounds(client, model)
            pause = await _pauses(client, model, pauses)
        finally:
            await client.close()
    return {"latency": latency, "child_rounds": child_rounds, "pause": pause}


# -- the plain pod and the fake's own time ----------------------------------------------------


async def _plain_rounds(root: Path, model: TreeModel, base_url: str) -> dict[str, Any]:
    """The same rounds in a plain ``pod serve`` (not a child); its memory afterwards."""
    from orchestrator.serving.client import PodClient
    from orchestrator.serving.server import socket_is_live

    socket = root / "plain.sock"
    env = {**os.environ, "ANTHROPIC_API_KEY": "bench-key", "ANTHROPIC_BASE_URL": base_url}
    args = [
        sys.executable, "-m", "cli", "serve", "--workspace", str(root / "ws"),
        "--socket", str(socket), "--session", str(root / "plain.jsonl"), "--name", "plain",
        "--provider", "anthropic", "--model", "fake-model", "--permission-mode", "accept-edits",
    ]  # fmt: skip
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        await _until(lambda: socket_is_live(socket) or proc.poll() is not None, 60, "plain pod")
        client = await PodClient.connect(socket)
        try:
            await client.send("run", {"input": "[[bench:plain]] Read README.md a few times."})
            end = await client.wait_for("run_end", timeout=120)
            if end.data.get("result") != "finished":
                raise RuntimeError(f"the plain turn ended {end.data}")
            kib, kind = memory_kib(proc.pid)
            await client.send("shutdown")
        finally:
            await client.close()
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return {"kib": kib, "kind": kind}


# -- the benchmark -------------------------------------------------------------------------


def _median_ms(values: list[float]) -> float | None:
    return statistics.median(values) * 1000 if values else None


def run(quick: bool = False) -> Result:
    """The benchmark; ``quick`` uses 2 tasks, 3 rounds and 2 pauses."""
    from conformance.fake_api import FakeAnthropic

    tasks = QUICK_TASKS if quick else TASKS
    rounds = QUICK_ROUNDS if quick else ROUNDS
    pauses = QUICK_PAUSES if quick else PAUSES
    model = TreeModel(rounds)
    saved = {k: os.environ.get(k) for k in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL")}
    saved["XDG_RUNTIME_DIR"] = os.environ.get("XDG_RUNTIME_DIR")
    with scratch_workspace("ps") as root, FakeAnthropic(responder=model.respond) as api:
        # Children find the fake as the SDK does; their sockets go to a private runtime dir.
        os.environ.update(
            ANTHROPIC_API_KEY="bench-key",
            ANTHROPIC_BASE_URL=api.base_url,
            XDG_RUNTIME_DIR=str(root / "run"),
        )
        (root / "run").mkdir(mode=0o700)
        try:
            parent = asyncio.run(_parent_phases(root, model, api.base_url, tasks, pauses))
            plain = asyncio.run(_plain_rounds(root, model, api.base_url))
            recorded = api.requests
            invalid = sum(1 for r in recorded if not r.valid)
            requests = len(recorded)
            deadline = time.monotonic() + 10.0  # stopped children may still be exiting
            while (leftover := leftover_processes(str(root))) and time.monotonic() < deadline:
                time.sleep(0.1)
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
    child = pod_rounds(recorded, parent["child_rounds"])
    alone = pod_rounds(recorded, "[[bench:plain]]")
    child_overhead, plain_overhead = _median_ms(child["pod"]), _median_ms(alone["pod"])
    latency = parent["latency"]["from_tool_call_done"]
    pause = parent["pause"]["all_children_paused"]
    memory = parent["pause"]["memory"]
    per_child = [
        (m["pod_kib"] or 0) + (m["supervisor_kib"] or 0) for m in memory if m["pod_kib"] is not None
    ]
    memory_figures = {
        "children": memory,
        "per_child_kib_median": statistics.median(per_child) if per_child else None,
        "pod_kib_median": statistics.median([m["pod_kib"] for m in memory if m["pod_kib"]])
        if memory
        else None,
        "supervisor_kib_median": statistics.median(
            [m["supervisor_kib"] for m in memory if m["supervisor_kib"]]
        )
        if memory
        else None,
        "plain_pod_kib": plain["kib"],
        "plain_pod_kind": plain["kind"],
        "with_pod_host_kib": None,
        "with_pod_host_reason": NO_POD_HOST,
    }
    kind = memory[0]["kind"] if memory else "unreadable"
    table = [
        row("task → child's first request p50", latency["p50_ms"], "ms"),
        row("task → child's first request p95", latency["p95_ms"], "ms"),
    ]
    if parent["latency"]["child_start"]:
        table.append(
            row(
                "  of which the child pod's start p50",
                parent["latency"]["child_start"]["p50_ms"],
                "ms",
                note="child event starting → its first state",
            )
        )
    table += [
        row(
            "round in a child, the fake's time subtracted",
            child_overhead,
            "ms",
            note="fake answered → the child's next request (a read_file round)",
        ),
        row("the same round in a plain pod", plain_overhead, "ms"),
        row(
            "child round − plain round",
            child_overhead - plain_overhead
            if child_overhead is not None and plain_overhead is not None
            else None,
            "ms",
        ),
        row("the fake's own time per round (subtracted)", _median_ms(child["fake"]), "ms"),
        row("pause → 4 children paused p50", pause["p50_ms"], "ms"),
        row(
            "pause → 4 children paused p99",
            pause["p99_ms"],
            "ms",
            target=f"≤ {TARGET_PAUSE_P99_MS:g} ms",
            met=pause["p99_ms"] <= TARGET_PAUSE_P99_MS,
        ),
        row(
            f"memory per child ({kind}: pod + supervisor)",
            memory_figures["per_child_kib_median"] / 1024
            if memory_figures["per_child_kib_median"]
            else None,
            "MiB",
        ),
        row("memory of a plain pod", plain["kib"] / 1024 if plain["kib"] else None, "MiB"),
        row("memory per child with a pod host", None, "MiB", note=NO_POD_HOST),
        row("requests refused by the fake", invalid, "", target="0", met=invalid == 0),
        row("processes left after the run", leftover, "", target="0", met=leftover == 0),
    ]
    return {
        "benchmark": NAME,
        "quick": quick,
        "params": {"tasks": tasks, "rounds": rounds, "pauses": pauses, "children": CHILDREN},
        "results": {
            "task_to_first_request": parent["latency"],
            "rounds": {
                "child": {
                    "rounds": len(child["round"]),
                    "round": latency_stats(child["round"]) if child["round"] else None,
                    "fake": latency_stats(child["fake"]) if child["fake"] else None,
                    "pod": latency_stats(child["pod"]) if child["pod"] else None,
                },
                "plain": {
                    "rounds": len(alone["round"]),
                    "round": latency_stats(alone["round"]) if alone["round"] else None,
                    "fake": latency_stats(alone["fake"]) if alone["fake"] else None,
                    "pod": latency_stats(alone["pod"]) if alone["pod"] else None,
                },
                "child_minus_plain_ms": child_overhead - plain_overhead
                if child_overhead is not None and plain_overhead is not None
                else None,
            },
            "pause": {
                "all_children_paused": pause,
                "parent_run_end_paused": parent["pause"]["parent_run_end_paused"],
            },
            "memory": memory_figures,
            "requests": requests,
            "invalid_requests": invalid,
            "leftover_processes": leftover,
        },
        "table": table,
    }


def main() -> None:
    """Print the result as JSON."""
    main_for(run, __doc__ or NAME)


if __name__ == "__main__":
    main()
