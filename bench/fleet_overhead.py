"""What the fleet's gateway costs per streamed delta: one reply of many deltas, streamed by a
pod served in this process and by the same kind of pod through a one-node fleet (gateway →
``PodHost`` actor → pod, events back through a Ray streaming generator).

Needs the ``fleet`` extra (Ray); prints one JSON object (``python -m bench.fleet_overhead``).
"""

from __future__ import annotations

import asyncio
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._common import Result, main_for, percentile

DELTAS = 1000


async def _time_run(socket: str) -> tuple[float, int]:
    """Seconds from sending ``run`` to its ``run_end``, and the deltas seen."""
    reader, writer = await asyncio.open_unix_connection(socket, limit=1 << 24)
    start = time.perf_counter()
    writer.write(b'{"method": "run", "params": {"input": "go"}}\n')
    deltas = 0
    while True:
        raw = json.loads(await asyncio.wait_for(reader.readline(), 120))
        deltas += raw["event"] == "text_delta"
        if raw["event"] == "run_end":
            writer.close()
            return time.perf_counter() - start, deltas


def _config(root: Path, name: str, runs: int) -> dict[str, Any]:
    workspace = root / name
    workspace.mkdir()
    script = root / f"{name}.json"
    reply = {"text": "ab" * DELTAS, "chunk_size": 2}
    script.write_text(json.dumps({"replies": [reply] * runs}))
    return {
        "workspace": str(workspace),
        "name": name,
        "provider": "scripted",
        "scripted_script": str(script),
        "sandbox": {"mode": "off"},
    }


async def _local(root: Path, runs: int) -> list[float]:
    from orchestrator.config.model import PodConfig
    from orchestrator.serving.pod import open_pod

    config = PodConfig.model_validate(_config(root, "local", runs))
    served = await open_pod(config, socket_path=root / "local.sock")
    try:
        return [(await _time_run(str(root / "local.sock")))[0] for _ in range(runs)]
    finally:
        await served.close()


async def _fleet(root: Path, gateway: Path, runs: int) -> list[float]:
    from orchestrator.serving.host import ask_host

    row = await ask_host(
        "load", {"config": _config(root, "fleet", runs)}, path=gateway / "control.sock"
    )
    return [(await _time_run(row["socket"]))[0] for _ in range(runs)]


def run(quick: bool) -> Result:
    """Both ways, a few runs each; the overhead per delta from the medians."""
    import ray

    from orchestrator.serving.fleet.cluster import deploy, start_local, teardown

    runs = 3 if quick else 10
    with tempfile.TemporaryDirectory(prefix="fleet-bench-") as tmp:
        root = Path(tmp)
        start_local()
        try:
            out = deploy(root / "shared", hosts_per_node=1)
            (gateway,) = out["gateways"].values()
            local = asyncio.run(_local(root, runs))
            fleet = asyncio.run(_fleet(root, Path(gateway["dir"]), runs))
            teardown()
        finally:
            ray.shutdown()
    local_ms, fleet_ms = percentile(local, 50) * 1000, percentile(fleet, 50) * 1000
    per_delta_us = (fleet_ms - local_ms) * 1000 / DELTAS
    return {
        "benchmark": "fleet_overhead",
        "quick": quick,
        "results": {
            "deltas_per_run": DELTAS,
            "runs": runs,
            "local_run_ms_p50": round(local_ms, 1),
            "fleet_run_ms_p50": round(fleet_ms, 1),
            "overhead_per_delta_us": round(per_delta_us, 1),
        },
        "table": [
            {"metric": "gateway overhead per delta", "value": round(per_delta_us, 1), "unit": "µs"}
        ],
    }


def main() -> None:
    """Print the figures as one JSON object."""
    main_for(run, __doc__ or "fleet_overhead")


if __name__ == "__main__":
    main()
