"""Running one round's tool calls: concurrently, capped, and truthful when interrupted.

Each call's result is committed the moment it finishes. If the turn is interrupted, every call
that had started gets a result saying so (``[Interrupted by user]``, how long it ran, the output
so far) before the cancellation propagates; calls that never started stay unanswered, so
Resume runs them and Cancel / Paused→Run close them.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from orchestrator.history import Item, ToolResult, ToolUseBlock
from orchestrator.interceptors import Deny, InterceptorChain, Pause
from orchestrator.scoped_fs import ScopedFS
from orchestrator.tool_output import cap_content, interrupted_output, to_tool_output
from orchestrator.tools.base import ToolContext, ToolError, ToolOutput
from orchestrator.tools.registry import ToolRegistry


class ToolsPaused(Exception):
    """A pre-tool interceptor asked to pause before this call."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(slots=True, kw_only=True)
class ToolRunner:
    """Runs tool calls against a registry inside the scoped file system."""

    registry: ToolRegistry
    fs: ScopedFS
    workspace: Path
    scratch_dir: Path
    cap_for: Callable[[str], int]
    """The content cap of a tool by name (``PodConfig.content_cap``)."""
    interceptors: InterceptorChain

    async def run_calls(self, calls: list[ToolUseBlock], commit: Callable[[Item], Item]) -> None:
        """Run calls concurrently, committing each result as it arrives."""
        allowed: list[ToolUseBlock] = []
        for call in calls:
            action = self.interceptors.tool(call)
            if isinstance(action, Deny):
                commit(
                    ToolResult(call_id=call.id, summary=f"denied: {action.reason}", is_error=True)
                )
            elif isinstance(action, Pause):
                # Calls already allowed run first; this one and later stay pending for Resume.
                if allowed:
                    await self._gather(allowed, commit)
                raise ToolsPaused(action.reason)
            else:
                allowed.append(call)
        if allowed:
            await self._gather(allowed, commit)

    async def _gather(self, calls: list[ToolUseBlock], commit: Callable[[Item], Item]) -> None:
        tasks = [asyncio.ensure_future(self._run_one(call, commit)) for call in calls]
        try:
            await asyncio.gather(*tasks)
        except asyncio.CancelledError:
            # gather cancels the children; wait for each to commit its interrupted result.
            for task in tasks:
                task.cancel()
            await asyncio.wait(tasks)
            raise

    async def _run_one(self, call: ToolUseBlock, commit: Callable[[Item], Item]) -> None:
        ctx = ToolContext(fs=self.fs, workspace=self.workspace, scratch_dir=self.scratch_dir)
        cap = self.cap_for(call.name)
        started = time.monotonic()
        tool = self.registry.get(call.name)
        try:
            if tool is None:
                known = ", ".join(self.registry.names())
                output = ToolOutput(
                    summary=f"unknown tool {call.name!r}; available: {known}", is_error=True
                )
            else:
                output = to_tool_output(await tool.run(call.input, ctx))
        except asyncio.CancelledError:
            output = interrupted_output(time.monotonic() - started, ctx.partial, cap)
            commit(_result(call, output))
            raise
        except ToolError as exc:
            output = ToolOutput(summary=f"{call.name}: {exc}", is_error=True)
        except Exception as exc:  # a tool bug must not kill the turn; the model reads it
            output = ToolOutput(
                summary=f"{call.name} failed: {type(exc).__name__}: {exc}", is_error=True
            )
        commit(_result(call, cap_content(output, cap)))


def _result(call: ToolUseBlock, output: ToolOutput) -> ToolResult:
    return ToolResult(
        call_id=call.id, summary=output.summary, content=output.content, is_error=output.is_error
    )
