"""Example 3: ten pods of one host driven at once, one prompt each.

    python examples/sdk/ten_pods.py "Run the tests and fix what fails" WORKSPACE...
    python examples/sdk/ten_pods.py --http "…" WORKSPACE...

Each workspace gets a pod in your ``pod host`` (started if none runs), as ``pod chat`` would
start it there; the runs then go side by side (over the pods' sockets, or with ``--http``
through the HTTP API), and each pod's result and cost is printed as it ends. The pods are
shut down at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from orchestrator import PodCalls, connect_http, start_pod
from orchestrator.protocol import RunEndData


async def drive(client: PodCalls, name: str, prompt: str) -> str:
    """One pod's run; its result."""
    async for event in client.run(prompt):
        if isinstance(event.payload, RunEndData):
            status = await client.status()
            print(f"{name}: {event.payload.result}, ${status.cost_usd or 0:.4f}", flush=True)
            return event.payload.result
    raise RuntimeError(f"{name}: the run did not end")


async def main(prompt: str, workspaces: list[Path], *, http: bool = False) -> dict[str, str]:
    """Start a pod per workspace, run ``prompt`` in all at once; each pod's result by name."""
    started = [await start_pod(workspace) for workspace in workspaces]
    names = [(await pod.status()).name for pod in started]
    clients: list[PodCalls] = list(started)
    if http:
        clients = [await connect_http(name) for name in names]
    try:
        results = await asyncio.gather(
            *(drive(client, name, prompt) for client, name in zip(clients, names, strict=True))
        )
    finally:
        for client in clients:
            if client not in started:
                await client.close()
        for pod in started:
            await pod.shutdown()
            await pod.close()
    return dict(zip(names, results, strict=True))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("prompt")
    parser.add_argument("workspaces", nargs="+", type=Path)
    parser.add_argument("--http", action="store_true")
    args = parser.parse_args()
    results = asyncio.run(main(args.prompt, args.workspaces, http=args.http))
    sys.exit(0 if all(result == "finished" for result in results.values()) else 1)
