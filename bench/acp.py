"""What ACP costs on top of our socket protocol: streaming, cancel, approval (``pod acp``).

Both paths run the same pod in a subprocess on the scripted provider (no model time):

* streaming: one reply of N 4-character chunks with no delay; time from sending the prompt
  to its end, per chunk, through ``pod serve`` + our socket client, and through ``pod acp``
  + the ACP SDK's client. Target: ACP under 2x the socket cost per chunk.
* cancel: a reply streaming a chunk every 5 ms; after a few chunks the client sends
  ``session/cancel`` and times the ``session/prompt`` response (stop reason ``cancelled``).
  Target: p99 under 20 ms.
* approval: each reply is a ``write_file`` call, which asks in the default mode; the client
  answers *Allow once* at once and times until the call is reported running
  (``tool_call_update``, in_progress, sent when the pod starts the approved call): the round
  trip the human is not part of. Target: under 5 ms.

    python -m bench.acp [--quick]
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, cast

from bench._common import Result, latency_stats, main_for, row, scratch_workspace

NAME = "acp"


class _Editor:
    """The ACP client side: counts chunks, answers permissions, notes when results arrive."""

    def __init__(self) -> None:
        self.chunks = 0
        self.changed = asyncio.Event()
        self.answered_at: float | None = None
        self.result_at: float | None = None

    async def request_permission(
        self, session_id: str, tool_call: Any, options: Any, **_: Any
    ) -> Any:
        from acp import schema

        self.answered_at = time.perf_counter()
        return schema.RequestPermissionResponse(
            outcome=schema.AllowedOutcome(outcome="selected", option_id="once")
        )

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        kind = update.session_update
        if kind == "agent_message_chunk":
            self.chunks += 1
        elif kind == "tool_call_update" and update.status == "in_progress":
            self.result_at = self.result_at or time.perf_counter()
        self.changed.set()

    def on_connect(self, conn: Any) -> None:
        pass

    async def until(self, predicate: Any) -> None:
        async with asyncio.timeout(60):
            while not predicate():
                self.changed.clear()
                await self.changed.wait()


def _script(root: Path, name: str, replies: list[dict[str, Any]]) -> Path:
    path = root / f"{name}.json"
    path.write_text(json.dumps({"replies": replies}))
    return path


def _env(root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    runtime = root / "run"
    runtime.mkdir(mode=0o700, exist_ok=True)
    env.update(XDG_RUNTIME_DIR=str(runtime), XDG_STATE_HOME=str(root / "state"))
    return env


async def _socket_stream(root: Path, ws: Path, script: Path, prompts: int) -> float:
    """Seconds per chunk through ``pod serve`` and our socket protocol."""
    from orchestrator.serving.client import PodClient
    from orchestrator.serving.server import socket_is_live

    socket = root / "run" / "s.sock"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "cli", "serve", "--workspace", str(ws), "--socket", str(socket),
        "--script", str(script), env=_env(root), stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    try:
        while not socket_is_live(socket):
            await asyncio.sleep(0.02)
        client = await PodClient.connect(socket)
        chunks, elapsed = 0, 0.0
        for _ in range(prompts):
            started = time.perf_counter()
            await client.send("run", {"input": "stream"})
            async for event in client.events():
                if event.event == "text_delta":
                    chunks += 1
                elif event.event == "run_end":
                    break
            elapsed += time.perf_counter() - started
        await client.send("shutdown")
        await client.close()
        return elapsed / max(chunks, 1)
    finally:
        if proc.returncode is None:
            proc.terminate()
        await proc.wait()


async def _acp_session(root: Path, ws: Path, script: Path) -> Any:
    from acp import PROTOCOL_VERSION
    from acp.stdio import spawn_agent_process

    editor = _Editor()
    # The SDK types its client side as a Protocol with every optional method; ours has the
    # two this agent calls.
    client = cast(Any, editor)
    manager = spawn_agent_process(
        client, sys.executable, "-m", "cli", "acp", "--script", str(script), env=_env(root)
    )
    conn, _process = await manager.__aenter__()
    await conn.initialize(protocol_version=PROTOCOL_VERSION)
    session = await conn.new_session(cwd=str(ws), mcp_servers=[])
    return manager, conn, editor, session.session_id


def _text(text: str) -> Any:
    from acp import schema

    return schema.TextContentBlock(type="text", text=text)


async def _acp_stream(root: Path, ws: Path, script: Path, prompts: int, chunks: int) -> float:
    """Seconds per chunk the pod streamed, through ``pod acp`` and the ACP SDK (which may
    join deltas that arrived together into one update)."""
    manager, conn, _editor, sid = await _acp_session(root, ws, script)
    try:
        elapsed = 0.0
        for _ in range(prompts):
            started = time.perf_counter()
            await conn.prompt(session_id=sid, prompt=[_text("stream")])
            elapsed += time.perf_counter() - started
        return elapsed / (prompts * chunks)
    finally:
        await manager.__aexit__(None, None, None)


async def _acp_cancel(root: Path, ws: Path, script: Path, samples: int) -> list[float]:
    manager, conn, editor, sid = await _acp_session(root, ws, script)
    out: list[float] = []
    try:
        for _ in range(samples):
            before = editor.chunks
            pending = asyncio.create_task(conn.prompt(session_id=sid, prompt=[_text("go")]))
            await editor.until(lambda before=before: editor.chunks >= before + 5)
            started = time.perf_counter()
            await conn.cancel(session_id=sid)
            response = await pending
            out.append(time.perf_counter() - started)
            assert response.stop_reason == "cancelled", response
        return out
    finally:
        await manager.__aexit__(None, None, None)


async def _acp_approval(root: Path, ws: Path, script: Path, samples: int) -> list[float]:
    manager, conn, editor, sid = await _acp_session(root, ws, script)
    out: list[float] = []
    try:
        for _ in range(samples):
            editor.answered_at = editor.result_at = None
            await conn.prompt(session_id=sid, prompt=[_text("write")])
            assert editor.answered_at is not None and editor.result_at is not None
            out.append(editor.result_at - editor.answered_at)
        return out
    finally:
        await manager.__aexit__(None, None, None)


def run(quick: bool) -> Result:
    """Measure the three figures; see the module docstring."""
    chunks = 500 if quick else 2000
    prompts = 2 if quick else 3
    samples = 10 if quick else 40
    stream: list[dict[str, Any]] = [{"text": "abcd" * chunks, "chunk_size": 4}] * prompts
    slow: list[dict[str, Any]] = [{"text": "y" * 2000, "chunk_size": 4, "chunk_delay_s": 0.005}] * (
        samples + 1
    )
    write = {"name": "write_file", "input": {"path": "out.txt", "content": "x\n"}}
    approvals: list[dict[str, Any]] = [{"tool_calls": [write]}, {"text": "ok"}] * samples

    with scratch_workspace("pa") as root:
        ws = root / "ws"

        async def measure() -> dict[str, Any]:
            socket_s = await _socket_stream(root, ws, _script(root, "s", stream), prompts)
            acp_s = await _acp_stream(root, ws, _script(root, "a", stream), prompts, chunks)
            cancels = await _acp_cancel(root, ws, _script(root, "c", slow), samples)
            approval = await _acp_approval(root, ws, _script(root, "w", approvals), samples)
            return {"socket_s": socket_s, "acp_s": acp_s, "cancel": cancels, "approval": approval}

        got = asyncio.run(measure())

    ratio = got["acp_s"] / got["socket_s"]
    cancel = latency_stats(got["cancel"])
    approval = latency_stats(got["approval"])
    return {
        "benchmark": NAME,
        "quick": quick,
        "results": {
            "chunks_per_prompt": chunks,
            "socket_us_per_chunk": got["socket_s"] * 1e6,
            "acp_us_per_chunk": got["acp_s"] * 1e6,
            "acp_over_socket": ratio,
            "cancel_to_cancelled": cancel,
            "approval_answer_to_running": approval,
        },
        "table": [
            row("socket protocol, per streamed chunk", got["socket_s"] * 1e6, "µs"),
            row("ACP, per streamed chunk", got["acp_s"] * 1e6, "µs"),
            row("ACP / socket per chunk", ratio, "×", target="< 2", met=ratio < 2),
            row(
                "session/cancel → cancelled, p99",
                cancel["p99_ms"],
                "ms",
                target="< 20",
                met=cancel["p99_ms"] < 20,
            ),
            row(
                "approval answered → tool running at the editor, p50",
                approval["p50_ms"],
                "ms",
                target="< 5",
                met=approval["p50_ms"] < 5,
            ),
        ],
    }


def main() -> None:
    """Print the JSON result."""
    main_for(run, __doc__ or NAME)


if __name__ == "__main__":
    main()
