"""Example 2: approvals answered by code, not by a person.

    python examples/sdk/approval.py POD "Add a CHANGELOG entry for the fix"
    python examples/sdk/approval.py --http POD "…"

The pod asks before a tool call its permission mode does not allow on its own (an edit in
the ``default`` mode, any command). This policy approves reads and edits, and denies every
command, telling the model why; each decision is printed.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from cli.terminal_text import visible
from orchestrator import connect
from orchestrator.protocol import ApprovalRequestData, RunEndData, ToolResultData


async def main(pod: str, prompt: str, *, http: bool = False) -> list[str]:
    """Run ``prompt``, answering each approval request by the policy; the decisions taken."""
    decisions: list[str] = []
    async with await connect(pod, http=http) as client:
        async for event in client.run(prompt):
            match event.payload:
                case ApprovalRequestData(id=call, kind=kind, tool=tool) if kind == "execute":
                    await client.deny(call, "this script runs no commands; do without")
                    decisions.append(f"denied {tool}")
                case ApprovalRequestData(id=call, tool=tool):
                    await client.approve(call, scope="once")
                    decisions.append(f"approved {tool}")
                case ToolResultData(summary=summary):
                    print(f"tool: {visible(summary)}")
                case RunEndData(result=result):
                    print(f"run {result}; {', '.join(decisions) or 'nothing asked'}")
    return decisions


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("pod")
    parser.add_argument("prompt")
    parser.add_argument("--http", action="store_true")
    args = parser.parse_args()
    asyncio.run(main(args.pod, args.prompt, http=args.http))
    sys.exit(0)
