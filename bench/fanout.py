"""``text_delta`` throughput from one pod to 1 / 4 / 16 clients over the real socket.

The pod is served in this process with the scripted provider streaming one long reply in
4-character chunks with no delay. The clients live in a separate process (so their reading
does not steal the pod's event loop): they connect, one sends ``run``, and each counts
``text_delta`` lines until ``run_end``. Rates are deltas / (``run_end`` received − ``run``
sent), per client and in total; every client must see every delta. "pod only" is the same
turn in process with no socket and no client, the ceiling the socket path works under.

    python -m bench.fanout [--quick]
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from bench._common import Result, bench_config, main_for, median, row, scratch_workspace, served_pod

NAME = "fanout"
CLIENTS = (1, 4, 16)
DELTAS = 20_000
QUICK_DELTAS = 300
REPEATS = 3
TARGET_EVENTS_PER_S_4 = 20_000.0

_DELTA = b'"event": "text_delta"'  # broadcast lines start with their eid
_RUN_END = b'"event": "run_end"'
_REPO = Path(__file__).resolve().parents[1]


# -- the client process ---------------------------------------------------------------------------


async def _count(reader: asyncio.StreamReader, start: float) -> dict[str, float]:
    """Count delta lines until ``run_end``; cheap (no JSON parsing) so the reader keeps up."""
    tail = b""
    deltas = 0
    first: float | None = None
    while True:
        chunk = await reader.read(256 * 1024)
        if not chunk:
            raise RuntimeError("the pod closed the connection before run_end")
        data = tail + chunk
        cut = data.rfind(b"\n") + 1
        lines, tail = data[:cut], data[cut:]
        n = lines.count(_DELTA)
        if n and first is None:
            first = time.perf_counter()
        deltas += n
        if _RUN_END in lines:
            end = time.perf_counter()
            return {
                "deltas": deltas,
                "seconds": end - start,
                "seconds_from_first_delta": end - (first or start),
            }


async def _clients(socket: str, n: int) -> dict[str, Any]:
    conns = [await asyncio.open_unix_connection(socket, limit=1 << 24) for _ in range(n)]
    await asyncio.sleep(0.2)  # let the pod register every connection before the run
    start = time.perf_counter()
    counters = [asyncio.create_task(_count(reader, start)) for reader, _ in conns]
    line = {"method": "run", "params": {"segments": [{"kind": "text", "text": "stream"}]}}
    conns[0][1].write(json.dumps(line).encode() + b"\n")
    await conns[0][1].drain()
    per_client = await asyncio.gather(*counters)
    for _, writer in conns:
        writer.close()
    return {"clients": per_client}


def worker(socket: str, n: int) -> None:
    """The client process: print the per-client counts as JSON."""
    print(json.dumps(asyncio.run(_clients(socket, n))), flush=True)


# -- the pod process --------------------------------------------------------------------------------


def _reply(deltas: int) -> Any:
    from orchestrator.adapters.providers.scripted import ScriptedReply

    return ScriptedReply(text="abcd" * deltas, chunk_size=4, chunk_delay_s=0.0)


async def _run_clients(socket: Path, n: int) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(_REPO)}
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bench.fanout",
        "--worker",
        str(socket),
        str(n),
        stdout=asyncio.subprocess.PIPE,
        cwd=_REPO,
        env=env,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(f"client process failed with {proc.returncode}")
    data: dict[str, Any] = json.loads(out)
    return data


async def _socket_runs(root: Path, deltas: int, clients: tuple[int, ...], repeats: int) -> Any:
    from orchestrator.adapters.providers.scripted import ScriptedProvider

    reply = _reply(deltas)
    provider = ScriptedProvider(responder=lambda request: reply)
    config = bench_config(root, session=root / "fanout.jsonl")
    socket = root / "f.sock"
    out: dict[str, Any] = {}
    async with served_pod(config, provider, socket):
        for n in clients:
            runs = [await _run_clients(socket, n) for _ in range(repeats)]
            totals: list[float] = []
            per_client_rates: list[float] = []
            complete = True
            for r in runs:
                counts = r["clients"]
                complete &= all(c["deltas"] == deltas for c in counts)
                wall = max(c["seconds"] for c in counts)
                totals.append(sum(c["deltas"] for c in counts) / wall)
                per_client_rates += [c["deltas"] / c["seconds"] for c in counts]
            out[str(n)] = {
                "clients": n,
                "deltas_expected": deltas,
                "deltas_per_client": [c["deltas"] for c in runs[-1]["clients"]],
                "all_clients_complete": complete,
                "total_events_per_s_median": median(totals),
                "per_client_events_per_s_median": median(per_client_rates),
                "per_client_events_per_s_min": min(per_client_rates),
                "runs": len(runs),
            }
    return out


async def _pod_only(root: Path, deltas: int) -> dict[str, Any]:
    """The same turn in process: no socket, no client, deltas encoded and dropped."""
    from orchestrator.adapters.providers.scripted import ScriptedProvider
    from orchestrator.protocol import parse_request
    from orchestrator.serving.pod import build_pod

    count = 0

    def sink(line: bytes) -> None:
        nonlocal count
        if line.startswith(b"{" + _DELTA):  # in process: not stamped by a server
            count += 1

    reply = _reply(deltas)
    provider = ScriptedProvider(responder=lambda request: reply)
    pod = build_pod(
        bench_config(root, session=root / "fanout-0.jsonl"), broadcast=sink, provider=provider
    )
    _, params = parse_request(json.dumps({"method": "run", "params": {"input": "stream"}}))
    start = time.perf_counter()
    pod.methods.handle("run", params, None, sink)
    await pod.controller.wait_idle()
    elapsed = time.perf_counter() - start
    pod.controller.transcript.session.close()
    return {"deltas": count, "events_per_s": count / elapsed}


def run(quick: bool = False) -> Result:
    """The benchmark; ``quick`` streams a few hundred deltas once per client count."""
    deltas = QUICK_DELTAS if quick else DELTAS
    repeats = 1 if quick else REPEATS
    with scratch_workspace() as root:
        pod_only = asyncio.run(_pod_only(root, deltas))
        by_clients = asyncio.run(_socket_runs(root, deltas, CLIENTS, repeats))
    table = [row("pod only (no socket): text_delta/s", pod_only["events_per_s"], "ev/s")]
    for n in CLIENTS:
        fig = by_clients[str(n)]
        each, total = fig["per_client_events_per_s_median"], fig["total_events_per_s_median"]
        strict = n == 4
        table.append(
            row(
                f"{n} client(s): per client",
                each,
                "ev/s",
                target=f"≥ {TARGET_EVENTS_PER_S_4:,.0f} each" if strict else None,
                met=each >= TARGET_EVENTS_PER_S_4 if strict else None,
                note="strict reading: every client sees the stream at 20k/s" if strict else None,
            )
        )
        table.append(
            row(
                f"{n} client(s): total",
                total,
                "ev/s",
                target=f"≥ {TARGET_EVENTS_PER_S_4:,.0f} total" if strict else None,
                met=total >= TARGET_EVENTS_PER_S_4 if strict else None,
            )
        )
    return {
        "benchmark": NAME,
        "quick": quick,
        "params": {"deltas": deltas, "clients": list(CLIENTS), "repeats": repeats},
        "results": {"pod_only": pod_only, "by_clients": by_clients},
        "table": table,
    }


def main() -> None:
    """Print the result as JSON (or, with ``--worker SOCKET N``, be the client process)."""
    if len(sys.argv) == 4 and sys.argv[1] == "--worker":
        worker(sys.argv[2], int(sys.argv[3]))
        return
    main_for(run, __doc__ or NAME)


if __name__ == "__main__":
    main()
