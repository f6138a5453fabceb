"""Running hook commands: each under a supervisor (its own process group, ended with all it
started on timeout, on pause or cancel, and when the pod dies), with the event's JSON on
stdin; outside the sandbox, as Claude Code runs them, or inside it where the hook says so or
runs a file of the workspace (:mod:`orchestrator.capabilities.hooks.scripts`)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchestrator.adapters.procs import Supervised, Supervision, spawn
from orchestrator.capabilities.hooks.outcome import HookRun
from orchestrator.capabilities.hooks.scripts import (
    Fingerprints,
    changed,
    fingerprints,
    named_paths,
    written_paths,
)
from orchestrator.config.hooks import HookCommand
from orchestrator.core.interceptors import HookEvent

if TYPE_CHECKING:
    from orchestrator.adapters.sandbox.sandboxing import Sandboxing

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
    outside_env: Mapping[str, str] = field(default_factory=dict)
    """Added to :attr:`env` for a hook that runs outside the sandbox: the certificate and
    proxy variables (:func:`orchestrator.capabilities.tools.environment.network_settings`), so a hook
    that fetches (``uv run``, ``npx``) works as it does in your shell."""
    sandboxing: Sandboxing | None = None
    """The commands' sandbox (set once the pod knows whether it can make one)."""
    _pinned: dict[str, Fingerprints] = field(default_factory=dict, init=False)
    """Per ``sandbox = false`` command: the workspace files it names, as they were at start."""
    _told: set[Path] = field(default_factory=set, init=False)
    """Changed files the person was already alerted about (once each)."""
    _seen: set[Path] = field(default_factory=set, init=False)
    """Workspace files a hook's command line named that were there once: a hook naming one
    stays inside the sandbox even while it is gone (a file removed and put back between the
    check and the run must not run outside)."""

    def pin(self, hooks: Iterable[HookCommand]) -> None:
        """Keep the fingerprints of the workspace files that ``sandbox = false`` hooks name
        (the pod calls this when it starts): a hook runs only the versions seen here."""
        for hook in hooks:
            if hook.sandbox is False and hook.command not in self._pinned:
                self._pinned[hook.command] = fingerprints(self._named(hook))
            elif hook.sandbox is None:
                self.inside(hook)  # what is there at start counts from the start

    def pins(self) -> dict[str, dict[str, str | None]]:
        """The fingerprints :meth:`pin` kept, as JSON data (an unload records them)."""
        return {
            command: {str(path): digest for path, digest in prints.items()}
            for command, prints in self._pinned.items()
        }

    def keep_pins(self, pins: Mapping[str, Mapping[str, str | None]]) -> None:
        """Take back the fingerprints an unloaded pod recorded, over those of this load."""
        for command, prints in pins.items():
            self._pinned[command] = {Path(path): digest for path, digest in prints.items()}

    def _named(self, hook: HookCommand, *, written: bool = False) -> tuple[Path, ...]:
        find = written_paths if written else named_paths
        return find(
            hook.command, self.workspace, home=self.env.get("HOME"), search=self.env.get("PATH")
        )

    def inside(self, hook: HookCommand) -> bool:
        """Whether ``hook`` is meant to run inside the sandbox: ``sandbox = true``; or unset,
        and its command line names a workspace path (written as one, whether or not a file is
        there yet), or a bare word that is or was a file of the workspace."""
        if hook.sandbox is not None:
            return hook.sandbox
        if self._named(hook, written=True):
            return True
        named = self._named(hook)
        self._seen.update(path for path in named if path.is_file())
        return any(path in self._seen for path in named)

    def sandboxed(self, hook: HookCommand) -> bool:
        """Whether ``hook`` runs in a sandbox here (where the pod has one)."""
        return self.inside(hook) and self.sandboxing is not None and bool(self.sandboxing.bwrap)

    def _refusal(self, hook: HookCommand) -> tuple[str, bool] | None:
        """Why a ``sandbox = false`` hook may not run (a workspace file it names changed since
        the pod started), and whether the person was told already; None: it may."""
        if hook.sandbox is not False:
            return None
        self.pin((hook,))  # a runner the pod did not pin keeps what it sees first
        moved = changed(self._pinned[hook.command], fingerprints(self._named(hook)))
        if not moved:
            return None
        told = all(path in self._told for path in moved)
        self._told.update(moved)
        names = ", ".join(str(path) for path in moved)
        return (
            f"not run: {names} changed since the pod started (the hook has sandbox = false, "
            "so it runs only the workspace files it found then; restart the pod to run the "
            "new version, or unset sandbox to run it in the sandbox)",
            told,
        )

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

    def argv(self, hook: HookCommand) -> tuple[list[str], bool] | str:
        """The command line and whether it is sandboxed, or why it cannot run (it belongs in
        the sandbox, which is on and cannot be made)."""
        where = self._placed(hook)
        if isinstance(where, (tuple, str)):
            return where
        return where.argv(["/bin/bash", "-c", hook.command], tag="hook"), True

    async def argv_async(self, hook: HookCommand) -> tuple[list[str], bool] | str:
        """:meth:`argv`, with the sandbox's walks of the workspace in a worker thread."""
        where = self._placed(hook)
        if isinstance(where, (tuple, str)):
            return where
        command = ["/bin/bash", "-c", hook.command]
        return await where.argv_async(command, tag="hook"), True

    def _placed(self, hook: HookCommand) -> tuple[list[str], bool] | str | Sandboxing:
        """The sandbox ``hook`` runs in (with the hooks folder readable), or its command line
        outside, or why it cannot run."""
        command = ["/bin/bash", "-c", hook.command]
        sandboxing = self.sandboxing if self.inside(hook) else None
        if sandboxing is None:
            return command, False
        if sandboxing.bwrap is None:
            return f"not run: [sandbox] mode is on, and {sandboxing.unavailable}"
        # Resolved, as the sandbox resolves what it shows: a linked hooks folder shows its
        # target (a mount on the link itself would land there anyway).
        hooks_dir = Path(os.path.realpath(self.hooks_dir))
        spec = replace(sandboxing.spec, readable=(*sandboxing.spec.readable, hooks_dir))
        return replace(sandboxing, spec=spec)

    async def run_one(self, hook: HookCommand, stdin: bytes, event: HookEvent) -> HookRun:
        """Run one hook to its end, its timeout, or an interruption (then re-raised)."""
        on_failure = hook.failure(event)
        started = time.monotonic()

        def finished(**fields: Any) -> HookRun:
            ms = int((time.monotonic() - started) * 1000)
            return HookRun(command=hook.command, ms=ms, on_failure=on_failure, **fields)

        refusal = self._refusal(hook)
        if refusal is not None:
            detail, told = refusal
            return finished(outcome="failed", detail=detail, quiet=told)
        where = await self.argv_async(hook)
        if isinstance(where, str):
            return finished(outcome="failed", detail=where)
        argv, sandboxed = where
        try:
            proc = await spawn(
                argv,
                SUPERVISION,
                cwd=self.workspace,
                env=dict(self.env) if sandboxed else {**self.env, **self.outside_env},
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
