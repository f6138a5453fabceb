"""The user's hook commands for one pod: which run for an event, what they decided, and the
record of it in the session (written before the pod acts on it)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from orchestrator.adapters.session.records import HookRecord, HookRunRecord
from orchestrator.capabilities.hooks.dialect import claude_name, from_claude, to_claude
from orchestrator.capabilities.hooks.events import HookContext
from orchestrator.capabilities.hooks.outcome import HookRun, Verdict, decide
from orchestrator.capabilities.hooks.runner import HookRunner
from orchestrator.config.hooks import HooksConfig
from orchestrator.core.interceptors import HookEvent


@dataclass(slots=True, kw_only=True)
class CommandHooks:
    """Runs ``[hooks]`` commands and keeps what they decided in the session."""

    config: HooksConfig
    runner: HookRunner
    context: HookContext
    record: Callable[[HookRecord], Awaitable[None]]
    """Writes (and syncs) a record; raises when the session cannot take it."""
    keep: Callable[[HookRecord], None] | None = None
    """Queues a record behind those already written (not waited for)."""
    alert: Callable[[str, str], None]
    """(level, message) for the person."""
    _background: set[asyncio.Task[Any]] = field(default_factory=set)

    def has(self, event: HookEvent) -> bool:
        """Whether any command is configured for ``event``."""
        return bool(self.config.for_event(event))

    async def fire(
        self,
        event: HookEvent,
        fields: Mapping[str, Any],
        *,
        subject: str | None = None,
        tool: str | None = None,
        call_id: str | None = None,
    ) -> Verdict:
        """Run the event's matching commands on its JSON; what they decided (an empty
        verdict when none matched). An interruption ends them and re-raises: not run."""
        aliases = (claude_name(tool),) if tool is not None else ()
        hooks = self.config.commands(event, subject, *aliases)
        if not hooks:
            return Verdict()
        payload = self.context.payload(event, **fields)
        runs = await self.runner.run_all(event, payload, hooks)
        verdict = decide(event, runs)
        for level, message in verdict.alerts:
            self.alert(level, message)
        record = self._record(event, verdict, runs, tool=tool, call_id=call_id)
        try:
            await self.record(record)
        except asyncio.CancelledError:
            if record.decision == "deny" and call_id is not None and self.keep is not None:
                # Interrupted while the denial was synced: it reaches the disk all the same,
                # but the pod never acted on it (the call stays unanswered; Resume asks the
                # hooks again). Unsaid, a restart would close the call as denied: not the
                # call this pod leaves pending.
                self.keep(
                    HookRecord(
                        event=record.event,
                        call_id=call_id,
                        reason="interrupted before the pod acted on it",
                        at_ms=int(time.time() * 1000),
                    )
                )
            raise
        return verdict

    def _record(
        self,
        event: HookEvent,
        verdict: Verdict,
        runs: list[HookRun],
        *,
        tool: str | None,
        call_id: str | None,
    ) -> HookRecord:
        decision: Any = verdict.permission or ("block" if verdict.block else "none")
        updated = verdict.updated_input
        return HookRecord(
            event=str(event),
            call_id=call_id,
            decision=decision,
            reason=verdict.reason,
            updated_input=(
                from_claude(tool, updated, self.runner.workspace)
                if updated is not None and tool is not None
                else None
            ),
            runs=[
                HookRunRecord(
                    command=run.command,
                    outcome=run.outcome,
                    code=run.code,
                    ms=run.ms,
                    detail=run.detail,
                )
                for run in runs
            ],
            at_ms=int(time.time() * 1000),
        )

    def tool_fields(self, tool: str, arguments: Mapping[str, Any], call_id: str) -> dict[str, Any]:
        """The tool part of a ``PreToolUse`` / ``PostToolUse`` JSON, in Claude Code's words."""
        return {
            "tool_name": claude_name(tool),
            "tool_input": to_claude(tool, arguments, self.runner.workspace),
            "tool_use_id": call_id,
            "pod_tool_name": tool,
        }

    def notify(self, message: str, kind: str) -> None:
        """Run ``Notification`` hooks in the background (nobody waits for them)."""
        if not self.has(HookEvent.NOTIFICATION):
            return
        fields = {"message": message, "notification_type": kind}
        task = asyncio.ensure_future(self._notify(fields, kind))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _notify(self, fields: Mapping[str, Any], kind: str) -> None:
        try:
            await self.fire(HookEvent.NOTIFICATION, fields, subject=kind)
        except Exception as exc:  # nobody awaits it: say so rather than lose it
            self.alert("warn", f"Notification hooks failed: {type(exc).__name__}: {exc}")

    async def aclose(self) -> None:
        """End notification hooks still running (the pod stops)."""
        for task in list(self._background):
            task.cancel()
        if self._background:
            await asyncio.wait(list(self._background))
