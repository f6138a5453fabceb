"""What the sandbox costs a command: ``true`` and an ``ls -R`` of 1,000 files, each run with
``/bin/bash -c`` as ``bash`` runs it, unsandboxed and in the sandbox (the pod's own
bubblewrap command line), interleaved; the overhead is the difference of the medians.

And what the pod does before each command besides starting it (the walks for protected paths
and deny rules' paths, the mount plan), in the same workspace.

Where ``[sandbox] network`` lists hosts, two more costs: starting ``true`` behind the bridge
to the pod's proxy (against the sandbox without it), and one HTTP request to a server on
127.0.0.1 through the bridge and the proxy (against the same request made directly), each on
a new connection as the proxy serves plain HTTP.

    python -m bench.sandbox [--quick]
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench._common import Result, TableRow, latency_stats, main_for, median, row
from orchestrator.adapters.sandbox.bwrap import (
    SandboxSpec,
    SandboxUnavailable,
    find_bwrap,
    hidden_paths,
    sandbox_argv,
)
from orchestrator.adapters.sandbox.proxy import BRIDGE_NAME, NetworkProxy
from orchestrator.adapters.sandbox.rule_paths import path_rules
from orchestrator.adapters.sandbox.sandboxing import Sandboxing
from orchestrator.capabilities.permissions.rules import Rule
from orchestrator.core.hosts import parse_host_rule

NAME = "sandbox"
RUNS = 60
QUICK_RUNS = 5
FILES = 1000
TARGET_MS = 15.0


def _tree(root: Path, files: int) -> None:
    for n in range(files):
        folder = root / f"d{n % 20:02d}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{n:04d}.txt").write_text("x\n")


def _time(argv: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, capture_output=True, timeout=60, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{argv[-1]!r} failed: {done.stderr.decode()[-300:]}")
    return elapsed


def run(quick: bool = False) -> Result:
    """The benchmark; ``quick`` takes a few runs of each."""
    runs = QUICK_RUNS if quick else RUNS
    try:
        bwrap = find_bwrap()
    except SandboxUnavailable as exc:
        return {
            "benchmark": NAME,
            "quick": quick,
            "params": {"runs": runs},
            "results": {"available": False, "why": str(exc)},
            "table": [row("sandbox available", 0, "bool", note=str(exc))],
        }
    with tempfile.TemporaryDirectory(prefix="bench-sbx") as tmp:
        base = Path(tmp)
        workspace = base / "ws"
        workspace.mkdir()
        _tree(workspace, 100 if quick else FILES)
        spec = SandboxSpec(
            workspace=workspace,
            home=Path.home(),
            hidden=hidden_paths(Path.home(), base / "state", base / "run", base / "cfg"),
            read_only=(workspace / ".git",),
        )
        results: dict[str, object] = {"available": True, "bwrap": bwrap}
        table = []
        for label, script in (("true", "true"), ("ls -R", "ls -R > /dev/null")):
            shell = ["/bin/bash", "-c", script]
            boxed = sandbox_argv(bwrap, spec, shell)
            plain_s: list[float] = []
            boxed_s: list[float] = []
            for _ in range(runs):  # interleaved: both see the same machine load
                plain_s.append(_time(shell, workspace))
                boxed_s.append(_time(boxed, workspace))
            overhead = median([b * 1000 for b in boxed_s]) - median([p * 1000 for p in plain_s])
            results[label] = {
                "plain": latency_stats(plain_s),
                "sandboxed": latency_stats(boxed_s),
                "overhead_ms": overhead,
            }
            table.append(
                row(
                    f"sandbox overhead: {label}",
                    overhead,
                    "ms",
                    target=f"≤ {TARGET_MS:g}",
                    met=overhead <= TARGET_MS,
                )
            )
        results["per_command"], per_command_row = _per_command(bwrap, spec, runs)
        table.append(per_command_row)
        results["proxy"], proxy_rows = _proxy_costs(bwrap, spec, base, runs)
        table += proxy_rows
    return {
        "benchmark": NAME,
        "quick": quick,
        "params": {"runs": runs, "files": 100 if quick else FILES},
        "results": results,
        "table": table,
    }


def _per_command(bwrap: str, spec: SandboxSpec, runs: int) -> tuple[dict[str, Any], TableRow]:
    """What the pod does before each command, besides starting it: the walk for protected
    paths and for the paths of two deny rules, and the mount plan's command line."""
    sandboxing = Sandboxing(
        bwrap=bwrap,
        spec=spec,
        rules=path_rules([Rule.parse("read(.env)"), Rule.parse("read(secrets/**)")]),
    )
    samples: list[float] = []
    for _ in range(runs):
        start = time.perf_counter()
        sandboxing.argv(["/bin/bash", "-c", "true"])
        samples.append(time.perf_counter() - start)
    stats = latency_stats(samples)
    note = "protected-path scan, two deny rules, mount plan"
    return stats, row("per command: the sandbox's spec", stats["median_ms"], "ms", note=note)


def _proxy_costs(
    bwrap: str, spec: SandboxSpec, base: Path, runs: int
) -> tuple[dict[str, Any], list[TableRow]]:
    """The bridge's start and a request's round trip through the proxy, against without."""
    shell = ["/bin/bash", "-c", "true"]
    with _serving(base) as (proxy, port):
        bridged = replace(spec, proxy=proxy.folder)
        plain_s: list[float] = []
        bridged_s: list[float] = []
        for _ in range(runs):
            plain_s.append(_time(sandbox_argv(bwrap, spec, shell), spec.workspace))
            bridged_s.append(_time(sandbox_argv(bwrap, bridged, shell), spec.workspace))
        with _bridge(proxy) as bridge_port:
            direct_s: list[float] = []
            proxied_s: list[float] = []
            for _ in range(runs * 4):
                direct_s.append(_get("127.0.0.1", port, "/"))
                proxied_s.append(_get("127.0.0.1", bridge_port, f"http://127.0.0.1:{port}/"))
    start = median([b * 1000 for b in bridged_s]) - median([p * 1000 for p in plain_s])
    request = median([p * 1000 for p in proxied_s]) - median([d * 1000 for d in direct_s])
    figures = {
        "start": {
            "sandboxed": latency_stats(plain_s),
            "behind_the_bridge": latency_stats(bridged_s),
            "overhead_ms": start,
        },
        "request": {
            "direct": latency_stats(direct_s),
            "through_the_proxy": latency_stats(proxied_s),
            "overhead_ms": request,
        },
    }
    rows = [
        row("proxy: bridge start (true)", start, "ms", note="[sandbox] network lists hosts"),
        row("proxy: one HTTP request", request, "ms", note="over a direct request"),
    ]
    return figures, rows


async def _answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """A server's whole answer to one HTTP request (the proxy asks for one per connection)."""
    await reader.readuntil(b"\r\n\r\n")
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n")
    await writer.drain()
    writer.close()


@contextlib.contextmanager
def _serving(base: Path) -> Iterator[tuple[NetworkProxy, int]]:
    """A web server on 127.0.0.1 and a proxy that lets only it through, served by an event
    loop of their own in a thread (the benchmark's requests block)."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()

    async def start() -> tuple[asyncio.Server, NetworkProxy, int]:
        server = await asyncio.start_server(_answer, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        proxy = await NetworkProxy.start([parse_host_rule(f"127.0.0.1:{port}")], base)
        return server, proxy, port

    server, proxy, port = asyncio.run_coroutine_threadsafe(start(), loop).result(30)
    try:
        yield proxy, port
    finally:
        asyncio.run_coroutine_threadsafe(proxy.close(), loop).result(30)
        server.close()
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)


@contextlib.contextmanager
def _bridge(proxy: NetworkProxy) -> Iterator[int]:
    """The bridge the sandbox runs, here on the host's loopback (the namespace adds nothing to
    a request's path): the port it listens on."""
    say_port = ["/bin/sh", "-c", 'echo "$HTTP_PROXY"; exec sleep 600']
    bridge = str(proxy.folder / BRIDGE_NAME)
    argv = [sys.executable, "-I", "-S", bridge, "--socket", str(proxy.socket), "--tag", "bench"]
    process = subprocess.Popen([*argv, "--", *say_port], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        yield int(process.stdout.readline().strip().rpartition(":")[2])
    finally:
        process.kill()
        process.wait()


def _get(host: str, port: int, target: str) -> float:
    """One GET on a new connection, read to the end; its seconds."""
    start = time.perf_counter()
    connection = http.client.HTTPConnection(host, port, timeout=30)
    try:
        connection.request("GET", target)
        answer = connection.getresponse()
        body = answer.read()
    finally:
        connection.close()
    if answer.status != 200 or body != b"ok\n":
        raise RuntimeError(f"GET {target} answered {answer.status}: {body[:200]!r}")
    return time.perf_counter() - start


def main() -> None:
    """Print the result as JSON."""
    main_for(run, __doc__ or NAME)


if __name__ == "__main__":
    main()
