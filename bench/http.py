"""The HTTP API under load (issue 46 §4): SSE clients on the pods of one host, each pod
streaming deltas at a steady pace; the delay the HTTP path adds to each ``text_delta``, the
host's memory, and one run over HTTP against one over the Unix socket.

A real ``pod host --http 127.0.0.1:0`` process (scripted provider, real sockets):

1. ``pods`` pods are added with ``POST /v1/pods``; ``clients`` SSE streams are opened, spread
   over them, and one Unix-socket client per pod (the reference: a client of the pod's own
   socket, in this same process);
2. every pod gets a ``run`` at once, answered with ``deltas`` text chunks ``1/rate`` s apart;
   for each ``text_delta`` the delay from its arrival on the pod's socket client to its arrival
   on each SSE stream (matched by event id) is a sample: p50, p95, p99 (signed: one read from
   the stream before the socket counts negative). The host's PSS and RSS
   are read while they stream;
3. one run of a quick answer, ``repeats`` times, over the socket (``run`` to ``run_end``) and
   over HTTP (``POST …/runs`` to ``run_end`` on the SSE stream), interleaved: the ratio of the
   medians.

Both sides of a sample are read by this one process, so its own event loop (parsing every
stream) is part of the figure, as a script's would be.

    python -m bench.http [--quick]
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench._common import Result, latency_stats, main_for, median, row

NAME = "http"
FULL = {"pods": 40, "clients": 200, "deltas": 100, "rate": 20, "repeats": 5}
QUICK = {"pods": 2, "clients": 4, "deltas": 10, "rate": 20, "repeats": 1}
TARGETS = {"delta_p95_ms": 50.0}


def _memory_kib(pid: int) -> dict[str, int]:
    found: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        name, _, rest = line.partition(":")
        if name in ("Rss", "Pss"):
            found[name.lower()] = int(rest.split()[0])
    return found


def _setup(root: Path, p: dict[str, int]) -> dict[str, str]:
    streamed = {
        "text": "word " * p["deltas"],
        "chunk_size": 5,
        "chunk_delay_s": 1.0 / p["rate"],
    }
    quick = {"text": "done " * 20, "chunk_size": 8}
    replies = [streamed] + [quick] * (2 * p["repeats"])
    script = root / "script.json"
    script.write_text(json.dumps({"replies": replies}))
    config = root / "cfg" / "pod"
    config.mkdir(parents=True)
    (config / "config.toml").write_text(
        f'provider = "scripted"\nscripted_script = "{script}"\ncheckpoints = false\n\n'
        '[sandbox]\nmode = "off"\n\n[permissions]\nmode = "accept-edits"\n\n'
        "[skills]\nclaude_dirs = false\n"
    )
    (root / "run").mkdir(mode=0o700)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env.pop("POD_NO_HOST", None)
    return {
        **env,
        "XDG_RUNTIME_DIR": str(root / "run"),
        "XDG_STATE_HOME": str(root / "state"),
        "XDG_CONFIG_HOME": str(root / "cfg"),
    }


class _Sse:
    """One SSE stream: arrival times of its ``text_delta`` ids, and when ``run_end`` came."""

    def __init__(self, client: httpx.AsyncClient, pod: str) -> None:
        self.arrived: dict[str, float] = {}
        self.ends: list[float] = []
        self.open = asyncio.Event()
        self.task = asyncio.create_task(self._read(client, pod))

    async def _read(self, client: httpx.AsyncClient, pod: str) -> None:
        async with client.stream("GET", f"/v1/pods/{pod}/events") as response:
            self.open.set()
            if response.status_code != 200:
                raise RuntimeError(f"the stream was refused: {(await response.aread())[:200]!r}")
            eid = event = ""
            async for line in response.aiter_lines():
                if line.startswith("id: "):
                    eid = line[4:]
                elif line.startswith("event: "):
                    event = line[7:]
                elif line == "":
                    now = time.perf_counter()
                    if event == "text_delta":
                        self.arrived[eid] = now
                    elif event == "run_end":
                        self.ends.append(now)
                    eid = event = ""


async def _socket_arrivals(socket: Path, until: int) -> tuple[dict[str, float], Any]:
    from orchestrator.serving.client import PodClient

    client = await PodClient.connect(socket)
    arrived: dict[str, float] = {}

    async def read() -> None:
        ends = 0
        async for event in client.events():
            if event.event == "text_delta" and event.eid:
                arrived[event.eid] = time.perf_counter()
            elif event.event == "run_end":
                ends += 1
                if ends == until:
                    return

    return arrived, (client, asyncio.create_task(read()))


async def _measure(env: dict[str, str], root: Path, p: dict[str, int]) -> dict[str, Any]:
    info_path = root / "run" / "pod" / "_http.json"  # host_http_info_path() in its env
    host = subprocess.Popen(
        [sys.executable, "-m", "cli", "host", "--http", "127.0.0.1:0"], env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not info_path.exists():
            if host.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the host's HTTP API did not start")
            await asyncio.sleep(0.05)
        info = json.loads(info_path.read_text())
        headers = {"Authorization": f"Bearer {info['token']}"}
        limits = httpx.Limits(max_connections=p["clients"] + 20)
        async with httpx.AsyncClient(
            base_url=info["url"], headers=headers, timeout=120, limits=limits
        ) as api:
            return await asyncio.wait_for(_phases(api, host.pid, root, p), 900)
    finally:
        host.send_signal(signal.SIGTERM)
        try:
            host.wait(60)
        except subprocess.TimeoutExpired:
            host.kill()


async def _phases(
    api: httpx.AsyncClient, pid: int, root: Path, p: dict[str, int]
) -> dict[str, Any]:
    pss_empty = _memory_kib(pid)
    rows = []
    for n in range(p["pods"]):
        workspace = root / "ws" / f"p{n:03d}"
        workspace.mkdir(parents=True)
        answer = await api.post("/v1/pods", json={"workspace": str(workspace)})
        answer.raise_for_status()
        rows.append(answer.json())
    names = [r["name"] for r in rows]
    streams = [_Sse(api, names[n % len(names)]) for n in range(p["clients"])]
    await asyncio.gather(*(s.open.wait() for s in streams))
    references = [await _socket_arrivals(Path(r["socket"]), 1) for r in rows]
    memory_idle = _memory_kib(pid)
    started = time.perf_counter()
    await asyncio.gather(*(api.post(f"/v1/pods/{n}/runs", json={"input": "go"}) for n in names))
    await asyncio.sleep(p["deltas"] / p["rate"] / 2)
    memory_streaming = _memory_kib(pid)
    await asyncio.gather(*(task for _, (_, task) in references))
    while any(not s.ends for s in streams):
        for stream in streams:
            if stream.task.done():
                stream.task.result()  # a stream that ended before its run_end: say why
        await asyncio.sleep(0.05)
    streamed_s = time.perf_counter() - started
    samples: list[float] = []
    for n, stream in enumerate(streams):
        reference = references[n % len(names)][0]
        samples += [at - reference[eid] for eid, at in stream.arrived.items() if eid in reference]
    deltas = sum(len(s.arrived) for s in streams)
    for stream in streams:
        stream.task.cancel()
    for _, (client, _) in references:
        await client.close()
    # One run over the socket against one over HTTP, on the first pod.
    over_socket: list[float] = []
    over_http: list[float] = []
    for _ in range(p["repeats"]):
        over_socket.append(await _socket_run(Path(rows[0]["socket"])))
        over_http.append(await _http_run(api, names[0]))
    return {
        # Signed: both sides are read by this process, in whichever order its loop takes
        # them, so a delta read from the SSE stream first counts negative.
        "delta_delay": latency_stats(samples),
        "deltas_received": deltas,
        "deltas_expected": p["clients"] * p["deltas"],
        "streamed_s": streamed_s,
        "host_kib_empty": pss_empty,
        "host_kib_idle": memory_idle,
        "host_kib_streaming": memory_streaming,
        "run_ms_socket": median(over_socket) * 1000,
        "run_ms_http": median(over_http) * 1000,
    }


async def _socket_run(socket: Path) -> float:
    from orchestrator.serving.client import PodClient

    client = await PodClient.connect(socket)
    started = time.perf_counter()
    await client.send("run", {"input": "go"})
    async for event in client.events():
        if event.event == "run_end":
            break
    took = time.perf_counter() - started
    await client.close()
    return took


async def _http_run(api: httpx.AsyncClient, pod: str) -> float:
    stream = _Sse(api, pod)
    await stream.open.wait()
    started = time.perf_counter()
    (await api.post(f"/v1/pods/{pod}/runs", json={"input": "go"})).raise_for_status()
    while not stream.ends:
        await asyncio.sleep(0.001)
    took = stream.ends[0] - started
    stream.task.cancel()
    return took


def run(quick: bool) -> Result:
    """Measure; the result as :mod:`bench` prints it."""
    p = QUICK if quick else FULL
    root = Path(tempfile.mkdtemp(prefix="pbh", dir="/tmp"))
    try:
        env = _setup(root, p)
        old = dict(os.environ)
        os.environ.update(env)  # the in-process socket clients resolve the same runtime dir
        try:
            figures = asyncio.run(_measure(env, root, p))
        finally:
            os.environ.clear()
            os.environ.update(old)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    p95 = figures["delta_delay"]["p95_ms"]
    ratio = figures["run_ms_http"] / figures["run_ms_socket"]
    figures["run_ratio_http_over_socket"] = ratio
    streaming = figures["host_kib_streaming"]
    table = [
        row(
            "text_delta delay to an SSE client, p95",
            p95,
            "ms",
            target=f"<= {TARGETS['delta_p95_ms']:.0f}",
            met=p95 <= TARGETS["delta_p95_ms"],
            note=f"{p['clients']} streams on {p['pods']} pods, {p['rate']} deltas/s each",
        ),
        row("text_delta delay, p50", figures["delta_delay"]["p50_ms"], "ms"),
        row("host PSS while streaming", streaming.get("pss", 0) / 1024, "MiB"),
        row("host RSS while streaming", streaming.get("rss", 0) / 1024, "MiB"),
        row("one run over HTTP / over the socket", ratio, "x"),
    ]
    return {"benchmark": NAME, "quick": quick, "params": p, "results": figures, "table": table}


def main() -> None:
    """Print the result as one JSON object."""
    main_for(run, __doc__ or NAME)


if __name__ == "__main__":
    main()
