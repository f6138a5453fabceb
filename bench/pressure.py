"""A pod under pressure from clients that never read: its memory and another client's latency.

A real pod process (``pod serve``, scripted provider, a session of ``HISTORY_ITEMS`` items)
runs ``bash`` commands that print a lot, round after round; ``clients`` clients connect, each asks for the
history ``HISTORY_REQUESTS`` times in one write and never reads a byte, so everything the pod
sends them piles up until the bounds of ``orchestrator/serving/server.py`` drop them. Meanwhile one more client asks
``get_status`` every 50 ms (on a schedule, whether the last was answered or not) and reads
its events. Reported: the pod's RSS growth over its
RSS before the turn (sampled every 20 ms, and the kernel's peak ``VmHWM``) against the total
bound plus 10 %, and the ``get_status`` latency (p50/p95) against 100 ms p95.

    python -m bench.pressure [--quick]
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench._common import (
    Result,
    history_items,
    latency_stats,
    main_for,
    row,
    scratch_workspace,
    write_session,
)

NAME = "pressure"
CLIENTS = 30
ROUNDS = 20
QUICK_ROUNDS = 8
ROUND_MB = 8
"""Each round a ``bash`` command prints this much; the first 4 MiB of it is streamed to the
clients (``RETAINED_OUTPUT_BYTES``), so the silent clients are sent some 4 MB a round."""
HISTORY_ITEMS = 6_000
HISTORY_REQUESTS = 40
AFTER_S = 6.0
"""Sampling goes on this long after the turn: a dropped client's connection is cut after
``DROP_GRACE_S``."""
STATUS_EVERY_S = 0.05
REPO = Path(__file__).resolve().parents[1]


def _status_kb(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


def _script(path: Path, rounds: int) -> None:
    # 1,000-byte lines, as a chatty build prints them.
    command = f"yes {'x' * 999} | head -c {ROUND_MB * 1_000_000}; echo printed"
    call = {"tool_calls": [{"name": "bash", "input": {"command": command, "timeout_s": 600}}]}
    replies = [call] * rounds + [{"text": "done"}]
    path.write_text(json.dumps({"replies": replies}))


async def _wait_socket(path: Path, proc: subprocess.Popen[bytes]) -> None:
    from orchestrator.serving.server import socket_is_live

    deadline = time.monotonic() + 120
    while not socket_is_live(path):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"pod serve did not start (exit {proc.poll()})")
        await asyncio.sleep(0.05)


async def measure(root: Path, rounds: int, clients: int) -> dict[str, Any]:
    """Serve a pod, flood ``clients`` silent clients for ``rounds`` rounds, measure."""
    from orchestrator.serving.client import PodClient
    from orchestrator.serving.server import CLIENTS_MAX_QUEUED_BYTES

    workspace = root / "ws"
    workspace.mkdir(exist_ok=True)
    script = root / "script.json"
    _script(script, rounds)
    session = root / "session.jsonl"
    write_session(session, history_items(HISTORY_ITEMS), workspace=workspace)
    sock = root / "s" / "pod.sock"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("ANTHROPIC_API_KEY", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli", "serve", "--workspace", str(workspace),
         "--socket", str(sock), "--provider", "scripted", "--script", str(script),
         "--allow-bash", "--permission-mode", "yolo", "--session", str(session)],
        env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    silent: list[socket.socket] = []
    try:
        await _wait_socket(sock, proc)
        for _ in range(clients):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # the kernel holds little
            s.connect(str(sock))
            silent.append(s)
        asks = b"".join(
            json.dumps({"method": "get_history", "id": n}).encode() + b"\n"
            for n in range(HISTORY_REQUESTS)
        )
        probe = await PodClient.connect(sock)
        driver = await PodClient.connect(sock)
        await probe.request("get_status")
        history = await probe.request("get_history", timeout=120)
        history_mb = len(json.dumps(history.data)) / 1e6
        base_kb = _status_kb(proc.pid, "VmRSS")
        peak_kb = base_kb
        latencies: list[float] = []
        done = asyncio.Event()
        outcome: dict[str, str] = {}

        async def sample() -> None:
            nonlocal peak_kb
            while not done.is_set():
                peak_kb = max(peak_kb, _status_kb(proc.pid, "VmRSS"))
                await asyncio.sleep(0.02)

        async def one_status() -> None:
            started = time.perf_counter()
            await probe.request("get_status", timeout=120)
            latencies.append(time.perf_counter() - started)

        async def ask() -> None:
            # On a fixed schedule, not one after the other: a pod that stalls for 9 s then
            # delays every request sent meanwhile, not one sample.
            asked: list[asyncio.Task[None]] = []
            while not done.is_set():
                asked.append(asyncio.create_task(one_status()))
                await asyncio.sleep(STATUS_EVERY_S)
            await asyncio.gather(*asked)

        async def drive() -> str:
            await driver.send("run", {"input": "print a lot"})
            while True:
                event = await driver.next_event(timeout=900)
                if event is not None and event.event == "tool_result":
                    outcome["tool_result"] = str(event.data.get("summary"))[:300]
                if event is not None and event.event == "run_end":
                    return str(event.data.get("result"))

        tasks = [asyncio.create_task(sample()), asyncio.create_task(ask())]
        await asyncio.sleep(0.5)
        for s in silent:
            s.sendall(asks)
        started = time.perf_counter()
        result = await drive()
        elapsed = time.perf_counter() - started
        await asyncio.sleep(AFTER_S)
        done.set()
        await asyncio.gather(*tasks)
        hwm_kb = _status_kb(proc.pid, "VmHWM")
        dropped = sum(_closed(s) for s in silent)
        await probe.close()
        await driver.close()
    finally:
        for s in silent:
            s.close()
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    bound_mb = CLIENTS_MAX_QUEUED_BYTES * 1.1 / 2**20
    growth_mb = (max(peak_kb, hwm_kb) - base_kb) / 1024
    return {
        "clients": clients,
        "rounds": rounds,
        "output_mb": rounds * ROUND_MB,
        "history_requests_per_client": HISTORY_REQUESTS,
        "history_reply_mb": history_mb,
        "turn_result": result,
        "tool_result": outcome.get("tool_result"),
        "turn_s": elapsed,
        "rss_before_mb": base_kb / 1024,
        "rss_growth_peak_mb": growth_mb,
        "rss_growth_bound_mb": bound_mb,
        "within_bound": growth_mb <= bound_mb,
        "silent_clients_dropped": dropped,
        "get_status": latency_stats(latencies),
    }


def _closed(s: socket.socket) -> bool:
    """Whether the pod closed this silent client's connection (its data is skipped over)."""
    s.setblocking(False)
    try:
        while True:
            if not s.recv(1 << 20):
                return True
    except BlockingIOError:
        return False
    except OSError:
        return True


def run(quick: bool) -> Result:
    rounds = QUICK_ROUNDS if quick else ROUNDS
    with scratch_workspace("pp") as root:
        figures = asyncio.run(measure(root, rounds, CLIENTS))
    status = figures["get_status"]
    table = [
        row(
            "RSS growth, 30 silent clients",
            round(figures["rss_growth_peak_mb"], 1),
            "MB",
            target=f"<= {figures['rss_growth_bound_mb']:.0f}",
            met=figures["within_bound"],
        ),
        row("get_status p50 meanwhile", round(status["p50_ms"], 1), "ms"),
        row(
            "get_status p95 meanwhile",
            round(status["p95_ms"], 1),
            "ms",
            target="<= 100",
            met=status["p95_ms"] <= 100,
        ),
        row("get_status slowest meanwhile", round(status["max_ms"], 1), "ms"),
    ]
    return {
        "benchmark": NAME,
        "quick": quick,
        "params": {
            "clients": CLIENTS,
            "rounds": rounds,
            "round_mb": ROUND_MB,
            "history_items": HISTORY_ITEMS,
            "history_requests": HISTORY_REQUESTS,
        },
        "results": figures,
        "table": table,
    }


def main() -> None:
    main_for(run, __doc__ or NAME)


if __name__ == "__main__":
    main()
