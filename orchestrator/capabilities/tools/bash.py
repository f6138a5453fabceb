"""The ``bash`` tool: one shell command in the workspace, under a supervisor.

The supervisor (``orchestrator/adapters/procs``) answers for everything the command starts, ``setsid``
children included. On timeout or cancellation all of it gets SIGTERM, then SIGKILL after a
short grace, so grandchildren (``make`` → ``cc``, ``sleep 60 &``) die with the shell; background
jobs that let go of the output (``server > log &``) run on until the pod stops, and die with it
even on ``kill -9``. Output is streamed into ``ctx.partial`` as it
arrives, so an interrupted call still shows what it printed. The shell gets an allow-listed
environment (``tools/environment.py``), never the pod's secrets such as ``ANTHROPIC_API_KEY``.

With ``background: true`` the command becomes a background job of the pod
(:mod:`orchestrator.capabilities.jobs`): the call returns at once with the job's id, and the job runs, under
its own supervisor and without a timeout, until it exits, is killed, or the pod stops.
"""

from __future__ import annotations

import asyncio
import codecs
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from pydantic import Field

from orchestrator.adapters.procs import Keeper, Ledger, Supervised, Supervision, spawn
from orchestrator.adapters.procs.exits import exit_text
from orchestrator.adapters.sandbox.bwrap import SandboxUnavailable
from orchestrator.adapters.sandbox.hints import sandbox_hint
from orchestrator.capabilities.tools.arguments import ToolArgs, TypedTool
from orchestrator.capabilities.tools.base import ToolContext, ToolError, ToolOutput
from orchestrator.capabilities.tools.bash_terminal import FELL_BACK, run_in_terminal
from orchestrator.capabilities.tools.environment import tool_environment
from orchestrator.capabilities.tools.timeouts import TimeoutCeiling, timeout_field

if TYPE_CHECKING:
    from orchestrator.adapters.sandbox.plant_guard import PlantGuard
    from orchestrator.adapters.sandbox.planted import Snapshot
    from orchestrator.adapters.sandbox.sandboxing import Sandboxing
    from orchestrator.capabilities.jobs import Jobs

log = logging.getLogger(__name__)

KILL_GRACE_S = 0.2
"""Between SIGTERM and SIGKILL: long enough to flush and exit, short enough to feel instant."""

SUPERVISION = Supervision(grace_s=KILL_GRACE_S, linger=True)

DRAIN_S = 0.5
"""How long to wait for the rest of the output once the group is dead or the shell exited."""

POLL_S = 0.05

RETAINED_OUTPUT_BYTES = 4 * 1024 * 1024
"""Output kept in memory; the rest is read and dropped so the command never blocks on a pipe."""

SUMMARY_COMMAND_CHARS = 60

_READ_CHUNK = 64 * 1024


def _headline(command: str) -> str:
    flat = " ".join(command.split())
    if len(flat) <= SUMMARY_COMMAND_CHARS:
        return flat
    return flat[:SUMMARY_COMMAND_CHARS] + "…"


async def _pump(stream: asyncio.StreamReader, partial: list[str]) -> None:
    """Decode output into ``partial`` as it arrives, until end of file."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    kept = dropped = 0
    while chunk := await stream.read(_READ_CHUNK):
        if kept >= RETAINED_OUTPUT_BYTES:
            dropped += len(chunk)
            continue
        kept += len(chunk)
        if text := decoder.decode(chunk):
            partial.append(text)
    if tail := decoder.decode(b"", final=True):
        partial.append(tail)
    if dropped:
        partial.append(f"\n[{dropped} more bytes of output not kept]\n")


KILLED_AFTER = "Seconds before the command is killed"
"""What ``bash``'s ``timeout_s`` bounds, in its schema."""


class BashArgs(ToolArgs):
    """``bash``'s arguments; the timeout's ceiling is per tool, from the config."""

    command: str = Field(description="The command line to run.")
    timeout_s: float | None = timeout_field(KILLED_AFTER)
    background: bool = Field(
        False,
        description="Start the command as a background job and return at once with its id "
        "(j1, j2, …), for servers, watchers and long builds. It has no timeout (timeout_s does "
        "not apply); it runs until it exits, job_kill ends it, or the pod stops. Read its "
        "output with job_output, wait for it with job_wait.",
    )


class SandboxedBashArgs(BashArgs):
    """``bash``'s arguments where commands run in the sandbox."""

    sandbox: bool = Field(
        True,
        description="false runs the command outside the sandbox (network, files outside the "
        "workspace); the user is always asked first.",
    )


class BashTool(TypedTool[BashArgs]):
    """Run a shell command with a timeout; the whole process group is killed on stop."""

    name = "bash"
    claude_code_name = "Bash"
    acp_kind = "execute"
    side_effects = True
    kind = "execute"
    description = (
        "Run a command with /bin/bash -c in the workspace directory. stdout and stderr are "
        "merged; stdin is empty, so interactive programs will not wait for input. Returns the "
        "exit code and output. Commands are killed (with everything they started) after "
        "timeout_s seconds. With background: true the command runs on as a background job "
        "(its id is returned at once)."
    )
    args_model: type[BashArgs] = BashArgs

    def __init__(
        self,
        *,
        default_timeout_s: float = 120.0,
        max_timeout_s: float = 600.0,
        env_allow: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        sandbox: bool = False,
    ) -> None:
        if default_timeout_s <= 0 or max_timeout_s <= 0:
            raise ValueError("bash timeouts must be positive")
        self.env_allow = tuple(env_allow)
        """Pod variables passed on beyond the defaults (``PodConfig.tool_env_allow``)."""
        self.env = dict(env or {})
        """Variables set for every command (``PodConfig.tool_env``)."""
        self.ledger: Ledger | None = None
        """Where each command's supervisor keeps its record, so that what outlives a killed
        supervisor is found by the next pod (set by the pod that serves)."""
        self.background = Keeper()
        """Commands whose background jobs still run; ended when the pod stops."""
        self.sandboxing: Sandboxing | None = None
        """Set by the pod that serves once it knows whether a sandbox can be made here: where
        none can, set only with ``[sandbox] mode = "on"`` (commands are then refused)."""
        if sandbox:
            # The schema is fixed for the pod's life (prompt caching): the argument exists
            # wherever the config asks for a sandbox, even before the pod found it works.
            self.args_model = SandboxedBashArgs
        self.planting: PlantGuard | None = None
        """The check after each sandboxed command of what it planted among the protected
        paths (set by the pod with the sandbox); None: no check."""
        self.jobs: Jobs | None = None
        """The pod's background jobs, for ``background: true`` (set by the pod; None: such a
        call is refused)."""
        self.timeout = TimeoutCeiling.of(default_timeout_s, max_timeout_s)
        self.max_timeout_s = self.timeout.max_s
        self.default_timeout_s = self.timeout.default_s
        super().__init__(schema_overrides=self.timeout.schema(KILLED_AFTER))

    async def execute(self, args: BashArgs, ctx: ToolContext) -> ToolOutput:
        """Run the command; on cancellation kill its process group and re-raise."""
        command = args.command
        if not command.strip():
            raise ToolError("command is empty")
        before = await self._check_start(args, ctx)
        if args.background:
            if before is not None and self.planting is not None:
                self.planting.last = before  # what the job plants is held at a later check
            return await self._start_job(args, ctx, before)
        timeout_s = self.timeout.seconds(args.timeout_s)
        headline = _headline(command)
        if ctx.client_terminal is not None and self.sandboxing is None:
            # The sandbox is off: the command shows in the editor's terminal (bash_terminal).
            env = tool_environment(os.environ, allow=self.env_allow, fixed=self.env)
            ran = await run_in_terminal(
                ctx.client_terminal, command, headline, ctx, timeout_s=timeout_s, env=env
            )
            if isinstance(ran, ToolOutput):
                return ran
            ctx.partial.append(FELL_BACK.format(why=ran))
        argv = await self._argv(command, args, ctx.call_id, before)
        try:
            supervision = SUPERVISION
            if self.ledger is not None:
                supervision = replace(SUPERVISION, report=self.ledger.record("bash"))
            proc = await spawn(
                argv,
                supervision,
                cwd=ctx.workspace,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                env=tool_environment(os.environ, allow=self.env_allow, fixed=self.env),
            )
        except OSError as exc:
            raise ToolError(f"could not start /bin/bash: {exc}") from None
        assert proc.process.stdout is not None
        reader = asyncio.create_task(_pump(proc.process.stdout, ctx.partial))
        try:
            try:
                async with asyncio.timeout(timeout_s):
                    await _finish(proc, reader)
            except TimeoutError:
                await _stop(proc, reader)
                note = await self._check_end(before, args, ctx)
                output = "".join(ctx.partial)
                return ToolOutput(
                    summary=f"bash: {headline} — timed out after {timeout_s:g} s",
                    content=f"timed out after {timeout_s:g} s; the command was killed. "
                    + (f"Output so far:\n{output}" if output else "No output.")
                    + (f"\n{note}" if note else ""),
                    is_error=True,
                )
        except BaseException:
            # Cancellation (pause, cancel, shutdown): the runner reports ctx.partial.
            await _stop(proc, reader)
            self._undo_planted(before, ctx)
            raise
        if not reader.done():
            # The shell exited but background jobs still hold its output open.
            await _stop(proc, reader)
            ctx.partial.append("\n[background processes still writing were stopped]\n")
        self.background.keep(proc)  # its supervisor stays while background jobs run
        code = proc.code
        assert code is not None
        note = await self._check_end(before, args, ctx)
        output = "".join(ctx.partial)
        if self.sandboxing is not None and self._sandboxed(args):
            refused = self.sandboxing.refused(ctx.call_id)
            hint = sandbox_hint(output, code, refused=refused, proxied=self.sandboxing.proxied)
            if hint is not None:
                output += ("\n" if output and not output.endswith("\n") else "") + hint
        if note:
            output += ("\n" if output and not output.endswith("\n") else "") + note
        return ToolOutput(summary=f"bash: {headline} — {exit_text(code)}", content=output or None)

    def _sandboxed(self, args: BashArgs) -> bool:
        """Whether this call runs in the sandbox."""
        wants = getattr(args, "sandbox", True)
        return self.sandboxing is not None and self.sandboxing.bwrap is not None and wants

    def _guard(self, args: BashArgs) -> PlantGuard | None:
        return self.planting if self._sandboxed(args) else None

    def _lingering(self) -> bool:
        """Whether sandboxed processes outlived their command (a background job; a kept
        supervisor), so that the protected paths may have changed since the last check."""
        return len(self.background) > 0 or bool(self.jobs is not None and self.jobs.running())
        # A job that ended since is checked as it ends (``Jobs.on_ended``).

    async def _check_start(self, args: BashArgs, ctx: ToolContext) -> Snapshot | None:
        """The protected paths before a sandboxed command; what processes that outlived an
        earlier command planted since the last check is held first (and asked about here)."""
        guard = self._guard(args)
        if guard is None:
            return None
        before = await guard.snapshot()
        if guard.last is None or not self._lingering():
            return before
        note = await guard.settle(
            guard.last, call_id=ctx.call_id, arguments={"command": args.command},
            say=ctx.partial.append, after=before,
        )  # fmt: skip
        if note is None:
            return before
        ctx.partial.append(f"{note} (planted by processes an earlier command left running)\n")
        return guard.last or await guard.snapshot()

    async def _check_end(
        self, before: Snapshot | None, args: BashArgs, ctx: ToolContext
    ) -> str | None:
        """After a sandboxed command: what it planted is held, the user asked (the output
        says it waits), and the answer's outcome returned for the model."""
        guard = self._guard(args)
        if guard is None or before is None:
            return None
        return await guard.settle(
            before, call_id=ctx.call_id, arguments={"command": args.command},
            say=ctx.partial.append,
        )  # fmt: skip

    def _undo_planted(self, before: Snapshot | None, ctx: ToolContext) -> None:
        """An interrupted command: what it planted is undone at once (nobody is asked)."""
        if self.planting is None or before is None:
            return
        try:
            note = self.planting.undo_now(before)
        except Exception:  # the interrupt goes on; what was not undone is logged
            log.exception("undoing what an interrupted command planted failed")
            return
        if note:
            ctx.partial.append(f"\n{note}\n")

    async def _argv(
        self, command: str, args: BashArgs, tag: str, before: Snapshot | None = None
    ) -> list[str]:
        """The shell command line, in the sandbox where it applies; ``tag`` names the
        command to the sandbox's proxy. The sandbox's walks of the workspace run in a worker
        thread (seconds in a workspace as large as ``$HOME``: the pod stays responsive);
        the walk of ``before`` (the plant guard's snapshot, just taken) is not made again."""
        shell = ["/bin/bash", "-c", command]
        if self.sandboxing is None or getattr(args, "sandbox", True) is False:
            return shell
        try:
            return await self.sandboxing.argv_async(
                shell, tag=tag, scan=before.scan if before is not None else None
            )
        except SandboxUnavailable as exc:
            raise ToolError(f"not run: [sandbox] mode is on, and {exc}") from None

    async def _start_job(
        self, args: BashArgs, ctx: ToolContext, before: Snapshot | None = None
    ) -> ToolOutput:
        """Start the command as a background job of the pod; its id comes back at once."""
        if self.jobs is None:
            raise ToolError("background jobs are not available here; run it without background")
        from orchestrator.capabilities.jobs import started_text

        job = await self.jobs.start(
            args.command,
            argv=await self._argv(args.command, args, ctx.call_id, before),
            call_id=ctx.call_id,
            cwd=ctx.workspace,
            env=tool_environment(os.environ, allow=self.env_allow, fixed=self.env),
            ledger=self.ledger,
        )
        ignored = " (timeout_s does not apply to background jobs)" if args.timeout_s else ""
        return ToolOutput(
            summary=f"bash: started background job {job.id}: {_headline(args.command)}",
            content=started_text(job) + ignored,
        )

    async def aclose(self) -> None:
        """End the background jobs of earlier commands (the pod stops)."""
        await self.background.close()
        if self.planting is not None:
            self.planting.close()


async def _finish(proc: Supervised, reader: asyncio.Task[None]) -> None:
    """Wait for the shell to exit and its output to end, or the shell plus a short drain."""
    loop = asyncio.get_running_loop()
    exited_at: float | None = None
    while not reader.done():
        await asyncio.wait({reader}, timeout=POLL_S)
        if proc.code is None:
            continue
        # Polled because waiting for the output's end would also wait for a background job
        # (`server &`) that holds it open forever.
        now = loop.time()
        if exited_at is None:
            exited_at = now
        elif now - exited_at >= DRAIN_S:
            return
    await reader  # re-raise a reader failure
    if await proc.exited() is None:
        raise ToolError("the command's supervisor ended before the command")


async def _stop(proc: Supervised, reader: asyncio.Task[None]) -> None:
    """End the command and all it started (SIGTERM, SIGKILL after the grace), and collect
    the last output."""
    proc.end()
    try:
        await asyncio.wait({reader}, timeout=KILL_GRACE_S + DRAIN_S)
    finally:
        # In a finally, so a second cancellation cannot skip it: the supervisor is waited
        # for (it kills what ignores SIGTERM), or killed if it does not answer.
        await proc.close()
        if not reader.done():
            try:
                await asyncio.wait({reader}, timeout=DRAIN_S)
            finally:
                if not reader.done():
                    reader.cancel()
