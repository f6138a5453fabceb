"""Running hook commands: each under a supervisor (its own process group, ended with all it
started on timeout, on pause or cancel, and when the pod dies), inside the commands' sandbox
when there is one, with the event's JSON on stdin."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchestrator.hooks.config import HookCommand
from orchestrator.hooks.events import HookEvent
from orchestrator.hooks.outcome import HookRun
from orchestrator.procs import Supervised, Supervision, spawn

if TYPE_CHECKING:
    from orchestrator.sandbox.sandboxing import Sandboxing

OUTPUT_MAX_BYTES = 1024 * 1024
"""What is kept of a hook's stdout and of its stderr; the rest is read and dropped."""

SUPERVISION = Supervision(grace_s=0.5)
"""A hook is ended with everything it started when it exits, times out or is interrupted."""

_DRAIN_S = 0.2
"""After the hook exits: how long its output may still be arriving."""


@dataclass(slots=True, kw_only=True)
class HookRunner:
    """Starts hook commands for one pod."""

    workspace: Path
    env: Mapping[str, str]
    """The tool environment (no secrets) plus the project-directory variables."""
    hooks_dir: Path
    """Where the user keeps hook scripts (``~/.config/pod/hooks``): readable in the sandbox,
    which otherwise hides the pod's config folder."""
    sandboxing: Sandboxing | None = None
    """The commands' sandbox (set once the pod knows whether it can make one)."""

    async def run_all(
        self, event: HookEvent, payload: Mapping[str, Any], hooks: Sequence[HookCommand]
    ) -> list[HookRun]:
        """Run ``hooks`` concurrently on ``payload``; their runs in the same order."""
        data = json.dumps(payload, ensure_ascii=False).encode()
        tasks = [asyncio.ensure_future(self.run_one(hook, data, event)) for hook in hooks]
        try:
            return list(await asyncio.gather(*tasks))
        except BaseException:
            for task in tasks:
                task.cancel()
            await asyncio.wait(tasks)
            raise

    def argv(self, hook: HookCommand) -> list[str] | str:
        """The command line, or why it cannot run (the sandbox is on and cannot be made)."""
        command = ["/bin/bash", "-c", hook.command]
        sandboxing = self.sandboxing if hook.sandbox else None
        if sandboxing is None:
            return command
        if sandboxing.bwrap is None:
            return f"not run: [sandbox] mode is on, and {sandboxing.unavailable}"
        spec = replace(sandboxing.spec, readable=(*sandboxing.spec.readable, self.hooks_dir))
        return replace(sandboxing, spec=spec).argv(command, tag="hook")

    async def run_one(self, hook: HookCommand, stdin: bytes, event: HookEvent) -> HookRun:
        """Run one hook to its end, its timeout, or an interruption (then re-raised)."""
        on_failure = hook.failure(event)
        started = time.monotonic()

        def finished(**fields: Any) -> HookRun:
            ms = int((time.monotonic() - started) * 1000)
            return HookRun(command=hook.command, ms=ms, on_failure=on_failure, **fields)

        argv = self.argv(hook)
        if isinstance(argv, str):
            return finished(outcome="failed", detail=argv)
        try:
            proc = await spawn(
                argv,
                SUPERVISION,
                cwd=self.workspace,
                env=dict(self.env),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
        except OSError as exc:
            return finished(outcome="failed", detail=f"it could not start: {exc}")
        process = proc.process
        assert process.stdout is not None and process.stderr is not None
        out = asyncio.create_task(_read_capped(process.stdout))
        err = asyncio.create_task(_read_capped(process.stderr))
        try:
            try:
                async with asyncio.timeout(hook.timeout):
                    await _feed(process.stdin, stdin)
                    code = await proc.exited()
                    await asyncio.wait({out, err}, timeout=_DRAIN_S)
            except TimeoutError:
                await _end(proc, out, err)
                return finished(
                    outcome="timeout",
                    detail=f"no answer within {hook.timeout:g} s; it was ended",
                    stdout=_text(out),
                    stderr=_text(err),
                )
        except BaseException:
            await _end(proc, out, err)
            raise
        await _end(proc, out, err)
        if code is None:
            return finished(outcome="failed", detail="its supervisor ended before it")
        return finished(outcome="ok", code=code, stdout=_text(out), stderr=_text(err))


async def _feed(pipe: asyncio.StreamWriter | None, data: bytes) -> None:
    """Write the event; a hook that exits without reading it is not an error."""
    if pipe is None:
        return
    with contextlib.suppress(ConnectionError, OSError):
        pipe.write(data)
        await pipe.drain()
    with contextlib.suppress(ConnectionError, OSError):
        pipe.close()


async def _read_capped(stream: asyncio.StreamReader) -> bytes:
    kept = bytearray()
    while chunk := await stream.read(65536):
        if len(kept) < OUTPUT_MAX_BYTES:
            kept += chunk[: OUTPUT_MAX_BYTES - len(kept)]
    return bytes(kept)


def _text(task: asyncio.Task[bytes]) -> str:
    if task.done() and not task.cancelled() and task.exception() is None:
        return task.result().decode(errors="replace")
    return ""


async def _end(proc: Supervised, *readers: asyncio.Task[bytes]) -> None:
    """End the hook and all it started, whatever happens meanwhile (a second interruption
    must not leave it running), and stop reading."""
    try:
        await asyncio.shield(proc.close())
        await asyncio.wait(readers, timeout=_DRAIN_S)  # the pipes close with the processes
    finally:
        for reader in readers:
            if not reader.done():
                reader.cancel()
        await asyncio.wait(readers)
