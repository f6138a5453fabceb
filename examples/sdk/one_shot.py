"""Example 1: one prompt, its answer streamed as it comes, then how the run ended.

    python examples/sdk/one_shot.py POD "Summarise README.md"
    python examples/sdk/one_shot.py --http POD "Summarise README.md"

POD is a pod's socket (a path), or the name of a pod of your ``pod host``; with ``--http``, the
name of a pod of the HTTP API whose ``_http.json`` the host wrote (docs/sdk.md).
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from cli.terminal_text import visible
from orchestrator import connect
from orchestrator.protocol import RunEndData, TextData


async def main(pod: str, prompt: str, *, http: bool = False) -> str:
    """Stream the answer to ``prompt`` to stdout; the run's result (``finished``…)."""
    async with await connect(pod, http=http) as client:
        async for event in client.run(prompt):
            match event.payload:
                case TextData(text=text) if event.event == "text_delta":
                    # The model's text may hold terminal escapes: show them, never obey them.
                    sys.stdout.write(visible(text))
                    sys.stdout.flush()
                case RunEndData(result=result):
                    status = await client.status()
                    cost = f"${status.cost_usd:.4f}" if status.cost_usd is not None else "unpriced"
                    print(f"\n[{result}; the session so far: {cost}]")
                    return result
    raise RuntimeError("the run did not end")  # run() always ends with run_end


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("pod")
    parser.add_argument("prompt")
    parser.add_argument("--http", action="store_true")
    args = parser.parse_args()
    sys.exit(0 if asyncio.run(main(args.pod, args.prompt, http=args.http)) == "finished" else 1)
