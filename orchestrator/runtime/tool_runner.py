"""Running one round's tool calls: concurrently, capped, and truthful when interrupted.

Each call's result is committed the moment it finishes. If the turn is interrupted, every call
that had started gets a result saying so (``[Interrupted by user]``, how long it ran, the output
so far) before the cancellation propagates; calls that never started stay unanswered, so
Resume runs them and Cancel / Paused→Run close them.

A call of a tool with side effects first gets a synced ``tool_start`` record in the session
(the write-ahead record) and copies its output to a spool file while it runs. If the pod dies
mid-call, the next start finds the record without a result and closes the call truthfully
(:func:`orchestrator.core.repair.close_crashed_calls`), so Resume never runs it a second time. A
call interrupted while its record is being synced never ran: a ``tool_not_started`` record
follows it, so the file, like the pod, leaves that call for Resume.

A **resumable** tool (``task``, whose child pod keeps its own session) is the exception: it
keeps its own write-ahead record, and an interrupted call is left unanswered on purpose, so
Resume runs it again (continuing the same child) and Cancel or Paused→Run close it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from orchestrator.adapters.scoped_fs import RuleDenied, ScopedFS
from orchestrator.adapters.session import SessionWriteError, ToolSpools, ToolStartRecord
from orchestrator.capabilities.hooks import HookEvent
from orchestrator.capabilities.hooks.chain import InterceptorChain
from orchestrator.capabilities.permissions import PLAN_TOOL, Decision, Policy, Subject, subject_of
from orchestrator.capabilities.permissions.approvals import Approvals
from orchestrator.capabilities.permissions.modes import ModeSwitch
from orchestrator.capabilities.tools.base import (
    PartialOutput,
    Tool,
    ToolContext,
    ToolError,
    ToolOutput,
    resumable,
    tool_kind,
)
from orchestrator.capabilities.tools.client_files import ClientFiles, ClientTerminal
from orchestrator.capabilities.tools.registry import ToolRegistry
from orchestrator.core.history import Item, ToolResult, ToolUseBlock
from orchestrator.core.interceptors import Deny, Pause, Proceed
from orchestrator.core.redaction import Redactor
from orchestrator.core.tool_output import cap_content, interrupted_output, to_tool_output
from orchestrator.runtime.plan_approval import settle_plan


class ToolsPaused(Exception):
    """A pre-tool interceptor (or a hook) asked to pause the turn.

    A signal, not a failure: the turn pauses and resumes later. It stays outside
    :class:`~orchestrator.errors.OrchestratorError` because a handler of failures that caught
    it would report a deliberate pause as an error."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class ToolJournal(Protocol):
    """Where the runner writes its write-ahead records (the pod's transcript)."""

    async def record_tool_start(self, record: ToolStartRecord) -> None:
        """Write and sync the record (and all before it); raise :class:`SessionWriteError` if
        the disk refuses."""
        ...

    def record_tool_not_started(self, call_id: str) -> None:
        """Queue a record cancelling the call's start record: it was interrupted before it
        ran."""
        ...

    @property
    def durable(self) -> bool:
        """True when everything committed is on disk."""
        ...


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
    journal: ToolJournal | None = None
    """Write-ahead records for tools with side effects; None runs without them (tests)."""
    spools: ToolSpools | None = None
    """Where such calls copy their output while they run."""
    on_output: Callable[[str, str], None] | None = None
    """Receives ``(call_id, text)`` as a running tool prints (the pod broadcasts it)."""
    on_start: Callable[[str, str], None] | None = None
    """Told ``(call_id, tool name)`` as a call begins to run, after any approval (telemetry)."""
    policy: Policy | None = None
    """Which calls run, ask first, or are denied; None runs everything (tests)."""
    approvals: Approvals | None = None
    """Where calls that ask wait for a person's answer."""
    modes: ModeSwitch | None = None
    """The pod's permission mode, which an approved plan switches (``exit_plan_mode``)."""
    redactor: Redactor | None = None
    """Known secrets, redacted from output before the cap cuts it (a value cut in two by the
    cap would otherwise survive in part)."""
    client_files: ClientFiles | None = None
    """The editor's files, while a client serves them (``offer_client_io``): the file tools
    read and write through it, under the same scope."""
    client_terminal: ClientTerminal | None = None
    """The editor's terminal, while a client serves it: ``bash`` runs there (sandbox off)."""
    _subjects: dict[str, Subject] = field(default_factory=dict, init=False)
    """What each decided call was resolved to, until it runs (its file-system guard)."""
    _rewritten: set[str] = field(default_factory=set, init=False)
    """Calls that run with the input a ``PreToolUse`` hook gave instead of the model's."""
    _stop: str | None = field(default=None, init=False)
    """A ``PostToolUse`` hook said to stop the turn once the round's results are in."""

    async def run_calls(
        self,
        calls: list[ToolUseBlock],
        commit: Callable[[Item], Item],
        signal: Callable[[str], None] | None = None,
    ) -> None:
        """Run calls concurrently, committing each result as it arrives.

        Calls the policy denies get a result saying so; calls that ask wait for an answer
        (``signal`` tells the machine) while the others run.
        """
        ready: list[tuple[ToolUseBlock, Decision | None]] = []
        self._subjects.clear()  # a round decides its calls afresh (after a resume too)
        self._stop = None
        for call in calls:
            action = await self.interceptors.pre_tool_use(call)
            if isinstance(action, Deny):
                commit(
                    ToolResult(call_id=call.id, summary=f"denied: {action.reason}", is_error=True)
                )
            elif isinstance(action, Pause):
                # Calls already allowed run first; this one and later stay pending for Resume.
                if ready:
                    await self._gather(ready, commit, signal)
                raise ToolsPaused(action.reason)
            else:
                if isinstance(action, Proceed) and action.input is not None:
                    call = dataclasses.replace(call, input=dict(action.input))
                    self._rewritten.add(call.id)
                decision = self._decide(call)
                if isinstance(action, Proceed):
                    decision = _with_hook(decision, action)
                if decision is not None and decision.verdict == "deny":
                    commit(
                        ToolResult(
                            call_id=call.id,
                            summary=f"{call.name}: not run — {decision.reason}",
                            is_error=True,
                        )
                    )
                else:
                    ready.append((call, decision))
        if ready:
            await self._gather(ready, commit, signal)
        if self._stop is not None:
            raise ToolsPaused(self._stop)

    def _decide(self, call: ToolUseBlock) -> Decision | None:
        tool = self.registry.get(call.name)
        if self.policy is None or tool is None:
            return None  # an unknown tool answers for itself
        kind = tool_kind(tool)
        # Rules see the paths the file system will open: ./, .., symlinks resolved.
        subject = subject_of(call.input, kind, self.fs.rule_path)
        self._subjects[call.id] = subject
        return self.policy.decide(call.name, kind, call.input, subject)

    def _fs_for(self, call: ToolUseBlock, tool: Tool | None) -> ScopedFS:
        """The file system a call works through: guarded by the same rules that let it run.

        Paths the decision was about pass (a person may have approved exactly them); any other
        path the tool opens, a file deep in a searched tree or a symlink swapped in since the
        decision, must be allowed on its own, or the tool gets an error for it.
        """
        policy, subject = self.policy, self._subjects.pop(call.id, None)
        if policy is None or tool is None or subject is None:
            return self.fs
        kind, decided, fs = tool_kind(tool), frozenset(subject.paths), self.fs

        def guard(real: Path, write: bool) -> None:
            rel = fs.rule_form(real)
            if rel in decided:
                return
            alone = Subject(text=rel, paths=(rel,), writes=(rel,) if write else ())
            decision = policy.decide(call.name, kind, {}, alone)
            if decision.verdict == "deny":
                raise RuleDenied(rel or ".", decision.reason)
            if decision.verdict == "ask":
                raise RuleDenied(rel or ".", f"{decision.reason}, and nobody approved it")

        return fs.guarded(guard)

    async def _gather(
        self,
        ready: list[tuple[ToolUseBlock, Decision | None]],
        commit: Callable[[Item], Item],
        signal: Callable[[str], None] | None,
    ) -> None:
        tasks = [
            asyncio.ensure_future(
                self._ask_then_run(call, decision, commit, signal)
                if decision is not None and decision.verdict == "ask"
                else self._run_one(call, commit)
            )
            for call, decision in ready
        ]
        try:
            await asyncio.gather(*tasks)
        except BaseException:
            # An interrupt, or one call that could not be recorded: stop the others too and
            # wait for each to commit its result, so nothing is committed after the turn ends.
            for task in tasks:
                task.cancel()
            await asyncio.wait(tasks)
            raise

    async def _run_one(self, call: ToolUseBlock, commit: Callable[[Item], Item]) -> None:
        tool = self.registry.get(call.name)
        fs = self._fs_for(call, tool)
        ctx = ToolContext(
            fs=fs,
            workspace=self.workspace,
            scratch_dir=self.scratch_dir,
            call_id=call.id,
            policy=self.policy,
            client_files=self.client_files,
            client_terminal=self.client_terminal,
        )
        if self.on_output is not None:
            ctx.partial.on_text = functools.partial(self.on_output, call.id)
        cap = self.cap_for(call.name)
        spool = await self._begin(call, tool, ctx, commit)
        if self.on_start is not None:
            # A name no tool has is the model's text: it is not passed on as a tool's name.
            self.on_start(call.id, call.name if tool is not None else "unknown")
        started = time.monotonic()
        try:
            if tool is None:
                known = ", ".join(self.registry.names())
                output = ToolOutput(
                    summary=f"unknown tool {call.name!r}; available: {known}", is_error=True
                )
            else:
                output = to_tool_output(await tool.run(call.input, ctx))
        except asyncio.CancelledError:
            if resumable(tool):
                raise  # unanswered on purpose: Resume continues it, Cancel closes it
            output = interrupted_output(time.monotonic() - started, ctx.partial, cap)
            commit(_result(call, output))
            self._finish(spool, ctx)
            raise
        except ToolError as exc:
            output = ToolOutput(summary=f"{call.name}: {exc}", is_error=True)
        except Exception as exc:  # a tool bug must not kill the turn; the model reads it
            output = ToolOutput(
                summary=f"{call.name} failed: {type(exc).__name__}: {exc}", is_error=True
            )
        if self.redactor is not None:
            output = self.redactor.output(output)
        output = cap_content(output, cap)
        notes: list[str] = []
        if call.id in self._rewritten:
            self._rewritten.discard(call.id)
            notes.append("[a PreToolUse hook rewrote this call's input before it ran]")
        if tool is not None and self.interceptors.has(HookEvent.POST_TOOL_USE):
            try:
                after = await self.interceptors.post_tool_use(
                    call, output.summary, output.content or "", output.is_error
                )
            except asyncio.CancelledError:
                # The call ran: its result is committed whatever happens to the hooks.
                commit(_result(call, _with_notes(output, notes)))
                self._finish(spool, ctx)
                raise
            notes += after.notes
            self._stop = self._stop or after.stop
        commit(_result(call, _with_notes(output, notes)))
        self._finish(spool, ctx)

    async def _ask_then_run(
        self,
        call: ToolUseBlock,
        decision: Decision,
        commit: Callable[[Item], Item],
        signal: Callable[[str], None] | None,
    ) -> None:
        """Wait for a person's answer, then run the call or say it was denied.

        An interrupt while waiting commits nothing: the call never started, so Resume asks
        again and a new turn closes it like any unanswered call.
        """
        if self.approvals is None:
            await self._run_one(call, commit)
            return
        if call.name == PLAN_TOOL and self.modes is not None:
            await settle_plan(
                call,
                decision,
                approvals=self.approvals,
                modes=self.modes,
                commit=commit,
                signal=signal or (lambda event: None),
            )
            return
        tool = self.registry.get(call.name)
        preview = getattr(tool, "preview", None)
        diff = await asyncio.to_thread(preview, call.input, self.fs) if preview else None
        answer = await self.approvals.ask(
            call,
            kind=tool_kind(tool),
            reason=decision.reason,
            diff=diff,
            signal=signal or (lambda event: None),
        )
        if answer.allow:
            await self._run_one(call, commit)
        else:
            reason = answer.message.strip() or "no reason given"
            # The model is told who refused: a person, or a client nobody could answer on.
            summary = (
                f"denied by user: {reason}"
                if answer.asked
                else f"not run: nobody could be asked to approve it ({reason})"
            )
            commit(ToolResult(call_id=call.id, summary=summary, is_error=True))

    async def _begin(
        self,
        call: ToolUseBlock,
        tool: Tool | None,
        ctx: ToolContext,
        commit: Callable[[Item], Item],
    ) -> str | None:
        """Write the call's write-ahead record when its tool has side effects; its spool name."""
        if tool is None or not tool.side_effects or self.journal is None or resumable(tool):
            return None
        spool: str | None = None
        if self.spools is not None:
            with contextlib.suppress(OSError):  # output copies are a bonus, records are not
                spool, fd = self.spools.create(call.id)
                ctx.partial = PartialOutput(fd, ctx.partial.on_text)
        record = ToolStartRecord(
            call_id=call.id, name=call.name, started_ms=int(time.time() * 1000), spool=spool
        )
        try:
            await self.journal.record_tool_start(record)
        except SessionWriteError as exc:
            # Never run a command the session cannot remember starting; say so truthfully.
            self._close_spool(spool, ctx)
            commit(
                ToolResult(
                    call_id=call.id,
                    summary=f"{call.name}: not run — {exc}",
                    is_error=True,
                )
            )
            raise
        except asyncio.CancelledError:
            # Paused or cancelled while the record was being synced: it reaches the disk all
            # the same, but the call never ran and stays unanswered (Resume runs it). Unsaid,
            # the file would hold a call that started and never ended, which a restart closes
            # as crashed, never to run: not the call this pod leaves pending.
            self.journal.record_tool_not_started(call.id)
            self._close_spool(spool, ctx)
            raise
        return spool

    def _finish(self, spool: str | None, ctx: ToolContext) -> None:
        """The result is committed; once it is on disk the spool has served its purpose."""
        if self.journal is not None and self.journal.durable:
            self._close_spool(spool, ctx)
        else:
            self._close_spool(None, ctx)  # kept: a crash before the result is written needs it

    def _close_spool(self, spool: str | None, ctx: ToolContext) -> None:
        if ctx.partial.spool_fd is not None:
            with contextlib.suppress(OSError):
                os.close(ctx.partial.spool_fd)
            ctx.partial.spool_fd = None
        if spool is not None and self.spools is not None:
            self.spools.remove(spool)


def _result(call: ToolUseBlock, output: ToolOutput) -> ToolResult:
    return ToolResult(
        call_id=call.id,
        summary=output.summary,
        content=output.content,
        is_error=output.is_error,
        images=list(output.images),
        documents=list(output.documents),
    )


def _with_hook(decision: Decision | None, action: Proceed) -> Decision | None:
    """A ``PreToolUse`` hook's permission over the policy's: ``allow`` answers a question the
    rules would ask, ``ask`` asks where they would not; a rule that denies still denies, and a
    firm question (a command leaving the sandbox) is a person's to answer, never a hook's."""
    reason = action.reason or "a PreToolUse hook said so"
    if decision is None and action.permission == "ask":
        return Decision(verdict="ask", reason=f"a PreToolUse hook asks: {reason}")
    if decision is None or decision.verdict == "deny" or action.permission is None:
        return decision
    if action.permission == "allow" and not decision.firm:
        return dataclasses.replace(decision, verdict="allow", reason=reason)
    if action.permission == "allow":  # a firm question: a person answers it, never a hook
        return dataclasses.replace(decision, reason=f"{decision.reason} (whatever a hook says)")
    return dataclasses.replace(decision, verdict="ask", reason=f"a PreToolUse hook asks: {reason}")


def _with_notes(output: ToolOutput, notes: list[str]) -> ToolOutput:
    """The output with what hooks said about it, after its content."""
    if not notes:
        return output
    text = "\n".join(notes)
    content = f"{output.content}\n\n{text}" if output.content else text
    return dataclasses.replace(output, content=content)
