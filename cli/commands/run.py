"""``pod run "prompt"``: submit one prompt, stream the answer, exit with its outcome."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from cli.errors import CliError

EXIT_CODES = {"finished": 0, "errored": 1, "limit_reached": 2, "paused": 3, "cancelled": 4}
"""``pod run``'s exit code for each ``run_end`` result."""


def register(app: typer.Typer) -> None:
    """Add the ``run`` command."""

    @app.command("run")
    def run(
        prompt: Annotated[str, typer.Argument(help="The prompt; @path attaches a file.")],
        workspace: Annotated[Path, typer.Option(help="Workspace of the pod.")] = Path("."),
        socket: Annotated[Path | None, typer.Option(help="Talk to the pod on this socket.")] = None,
        json_out: Annotated[
            bool, typer.Option("--json", help="Print every event as a JSON line.")
        ] = False,
        shutdown_after: Annotated[
            bool, typer.Option(help="Shut the pod down when the run ends.")
        ] = False,
        timeout: Annotated[float, typer.Option(help="Give up after this many seconds.")] = 600.0,
    ) -> None:
        """Submit a prompt to the workspace's pod (starting one if needed) and stream the answer.

        Exit codes: 0 finished, 1 errored, 2 limit reached, 3 paused, 4 cancelled.
        """
        from cli.client_sync import with_client
        from cli.pods import ensure_pod

        if not prompt.strip():
            raise CliError("the prompt is empty")
        target = socket or ensure_pod(workspace).socket

        async def body(client: Any) -> str:
            import asyncio

            await client.send("run", {"input": prompt}, id="run")
            result = await asyncio.wait_for(_stream(client, json_out), timeout)
            if shutdown_after:
                await client.send("shutdown")
            return result

        result = with_client(target, body)
        raise typer.Exit(EXIT_CODES.get(result, 1))


async def _stream(client: Any, json_out: bool) -> str:
    """Print events until the run ends; returns the ``run_end`` result."""
    out, err = sys.stdout, sys.stderr
    started = False
    async for event in client.events():
        data = event.data
        if json_out:
            out.write(json.dumps({"event": event.event, "data": data}) + "\n")
            out.flush()
        if event.event == "error" and data.get("id") in ("run", None) and not started:
            raise CliError(f"{data['code']}: {data['message']}")
        if event.event == "turn_start":
            started = True
        if json_out:
            if event.event == "run_end":
                return str(data["result"])
            continue
        if event.event == "text_delta":
            out.write(data["text"])
            out.flush()
        elif event.event == "text_done":
            out.write("\n")
        elif event.event == "tool_call_done":
            args = json.dumps(data["arguments"], ensure_ascii=False)
            err.write(f"⚙ {data['name']} {args[:120]}\n")
        elif event.event == "tool_result":
            mark = "✗" if data["is_error"] else "✓"
            err.write(f"  {mark} {data['summary']}\n")
        elif event.event == "alert":
            err.write(f"! {data['level']}: {data['message']}\n")
        elif event.event == "error":
            err.write(f"error: {data['code']}: {data['message']}\n")
        elif event.event == "run_end":
            return str(data["result"])
        elif event.event == "shutdown":
            return "cancelled"
    raise CliError("the pod closed the connection before the run ended")
