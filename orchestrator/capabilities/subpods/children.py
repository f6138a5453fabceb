"""A parent's child pods: starting them write-ahead, limits, and the lifecycle cascades.

Each ``task`` call gets one child pod, linked to the call by a :class:`ChildRecord` written
and synced in the parent's session **before** the child starts. From then on the call is the
child's, through every interleaving:

- **pause** of the parent cancels the call's task, which pauses the child (its own turn,
  resumable) and leaves the call unanswered; **resume** runs the call again, which finds the
  record and resumes that same child;
- a **new message** to a paused parent, **cancel** and **shutdown** close the call with a
  synthetic result (:meth:`Children.closing`) that says what the child had done, and cancel
  and stop the child;
- a **crash** of the parent kills the child with it (its supervisor SIGKILLs it), so both
  sessions are cut off mid-turn; the parent comes back paused, and Resume starts the child
  again on its own session and resumes it: one child session, never two;
- a child that **dies** on its own ends the call with a result that says so; its session
  stays resumable by a person (``pod chat --session``).

Approvals a child asks for are relayed to the parent's clients (``approval_request`` with
``pod`` set) and their answers sent back down.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import replace
from pathlib import Path

from orchestrator.adapters.session import (
    ChildRecord,
    SessionError,
    ensure_private_dir,
    load_session,
)
from orchestrator.capabilities.subpods.child import BUDGET, ENDED, Child, ChildFailed
from orchestrator.capabilities.subpods.launcher import ChildLauncher
from orchestrator.capabilities.subpods.parent import ParentLinks, RelayedAnswer, RelayedInput
from orchestrator.capabilities.subpods.report import (
    ChildReport,
    ChildWork,
    interrupted_text,
    task_output,
    work_since_prompt,
)
from orchestrator.capabilities.subpods.spec import ChildRequest, child_config, child_pod_name
from orchestrator.capabilities.subpods.worktree import WorktreeError, make_worktree, worktree_diff
from orchestrator.capabilities.tools.base import PartialOutput, ToolError, ToolOutput
from orchestrator.config.model import PodConfig
from orchestrator.config.paths import runtime_dir
from orchestrator.core.history import ToolResult
from orchestrator.protocol import ApprovalRequestData, ChildData, ElicitationRequestData


class Children:
    """The child pods of one parent pod."""

    def __init__(
        self,
        *,
        config: PodConfig,
        session_path: Path,
        records: dict[str, ChildRecord],
        launcher: ChildLauncher | None = None,
    ) -> None:
        self.config = config
        self.launcher = launcher
        """Starts the children (injected by the serving layer); None: none can start."""
        self.folder = session_path.with_name(session_path.stem + ".children")
        self.records = dict(records)
        """Every child this session started, by call id (loaded ones included)."""
        self.live: dict[str, Child] = {}
        self.links: ParentLinks | None = None
        self._slots = asyncio.Semaphore(config.subpods.max_children)
        self._closing: set[asyncio.Task[None]] = set()
        self._bases: dict[str, str] = {}
        self._numbered: int | None = None
        """The highest number a child's name has had (counted from disk at first use)."""

    # -- what the parent shows ----------------------------------------------------------

    def report(self) -> list[ChildData]:
        """Live children, as ``status`` lists them."""
        return [child.view() for child in self.live.values()]

    def _changed(self, child: Child) -> None:
        if self.links is not None:
            self.links.emit("child", child.view())

    # -- running a task ---------------------------------------------------------------------

    async def run(self, call_id: str, request: ChildRequest, partial: PartialOutput) -> ToolOutput:
        """Run the call's child to the end of its task (start, attach or resume it)."""
        links = self._links()
        child = self.live.get(call_id)
        if child is None:
            child = self._handle(call_id, request)
            self.live[call_id] = child
            self._changed(child)
        child.on_text = partial.append
        child.on_approval = self._relay
        child.on_input = self._relay_input
        try:
            # The slot is held until the child's process is gone: max_children counts pods.
            async with self._slots:
                if not child.alive:
                    await self._start(child, request)
                else:
                    # The parent's budget may have been raised since the child paused.
                    await child.set_budget(links.budget().budget_usd)
                result = await child.run_to_end(request.prompt)
                self._count(child)
                while result == BUDGET:
                    await self._pause_for_budget(child)
                    # The parent has no cap any more (removed while the child ran): go on.
                    await child.set_budget(links.budget().budget_usd)
                    result = await child.run_to_end(request.prompt)
                    self._count(child)
                child.flush_output()
                child.on_text = child.on_approval = child.on_input = None
                self.live.pop(call_id, None)
                await child.stop()
        except ChildFailed as exc:
            self.live.pop(call_id, None)
            await child.stop()
            started = child.started
            detail = f"{exc}; {self._resumable(child)}" if started else str(exc)
            report = await self._report(child, "died" if started else "failed", detail)
            return task_output(report)
        except asyncio.CancelledError:
            # Pause (or the first step of cancel and shutdown): the child pauses in its own
            # state, resumable; the call stays open until the parent resumes or closes it.
            # The tool runner cancels a round's calls twice (its gather, then each task), so
            # what follows is waited for through further cancels: else the parent says
            # "paused" while a child still pauses, and a quick resume finds it running.
            if child.alive:
                settling = asyncio.ensure_future(self._paused(child))
            else:
                # Not started, or half-started: nothing runs to pause; Resume starts it anew
                # (on its session, if its record was written).
                self.live.pop(call_id, None)
                settling = asyncio.ensure_future(
                    child.stop() if child.started else asyncio.sleep(0)
                )
            while not settling.done():
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.shield(settling)
            raise
        finally:
            child.drop_relays()
            child.flush_output()
            child.on_text = None
            child.on_approval = None
            child.on_input = None
        if result == ENDED:
            result = await asyncio.to_thread(_last_turn_result, Path(child.record.session))
        detail = ""
        if result == "limit_reached":
            detail = "it hit its limit (token budget or rounds)"
        elif result == "errored":
            detail = f"its turn failed ({child.tail.strip()[-200:] or 'see its session'})"
        elif result == "cancelled":
            detail = "its turn was cancelled at the child"
        report = await self._report(child, result, detail)
        # A child that did its work is news, not a warning; one that stopped short is.
        level = "info" if result == "finished" else "warn"
        links.alert(level, "subpods", f"child {child.name}: {result}")
        return task_output(report)

    def _count(self, child: Child) -> None:
        """Count what the child spent since last counted as the parent's spend."""
        dollars = child.uncounted_usd()
        if dollars > 0:
            self._links().spent(dollars, f"task:{child.name}")

    async def _paused(self, child: Child) -> None:
        await child.pause()
        self._count(child)

    async def _pause_for_budget(self, child: Child) -> None:
        """The child paused at the budget the parent passed down: the parent's turn pauses
        the same way (the call stays open; resume runs it again, with what is left)."""
        if self._links().budget_paused(child.name):
            # The parent's pause cancels this call's task: wait for it here.
            await asyncio.Event().wait()

    def _handle(self, call_id: str, request: ChildRequest) -> Child:
        record = self.records.get(call_id)
        if record is None:
            name = child_pod_name(self.config.pod_name(), request.name, self._next_number())
            isolated = request.isolation == "worktree"
            workspace = self.folder / f"{name}.worktree" if isolated else self.config.workspace
            record = ChildRecord(
                call_id=call_id,
                name=name,
                session=str(self.folder / f"{name}.jsonl"),
                workspace=str(workspace),
                isolation=request.isolation,
                agent=request.agent,
                started_ms=int(time.time() * 1000),
            )
        return Child(
            record,
            socket=runtime_dir() / f"{record.name}.sock",
            log_path=self.folder / f"{record.name}.log",
            on_change=self._changed,
            launcher=self.launcher,
        )

    def _next_number(self) -> int:
        """A number no child of this session has had, even one whose record never reached
        the parent's file (restored from an older copy): its session is never adopted by
        another call."""
        if self._numbered is None:
            files = len(list(self.folder.glob("*.jsonl"))) if self.folder.is_dir() else 0
            self._numbered = max(len(self.records), files)
        self._numbered += 1
        return self._numbered

    async def _start(self, child: Child, request: ChildRequest) -> None:
        """Record the child (write-ahead, once), make its worktree, start its process."""
        links = self._links()
        record = child.record
        try:
            ensure_private_dir(self.folder)
        except OSError as exc:
            raise ToolError(f"cannot make {self.folder}: {exc.strerror}") from None
        if record.call_id not in self.records:
            await links.record(record)  # synced: from here on the call is this child's
            self.records[record.call_id] = record
        if record.isolation == "worktree":
            try:
                self._bases[record.call_id] = await make_worktree(
                    self.config.workspace, Path(record.workspace)
                )
            except WorktreeError as exc:
                raise ChildFailed(f"cannot make the child's worktree: {exc}") from None
        config = child_config(
            self.config,
            request,
            name=record.name,
            session=Path(record.session),
            socket=child.socket,
            workspace=Path(record.workspace),
            offered=links.offered(),
            budget_usd=links.budget().budget_usd,
        )
        await child.launch(config, timeout_s=self.config.subpods.start_timeout_s)

    async def _relay(self, child: Child, request: ApprovalRequestData) -> RelayedAnswer:
        links = self._links()
        relayed = request.model_copy(update={"pod": child.name})
        return await links.approvals.relay(relayed, signal=links.signal)

    async def _relay_input(self, child: Child, request: ElicitationRequestData) -> RelayedInput:
        links = self._links()
        relayed = request.model_copy(update={"pod": child.name})
        return await links.elicitations.ask(relayed, signal=links.signal)

    async def _report(self, child: Child, result: str, detail: str) -> ChildReport:
        """What the child did, from its own session file."""
        work = await asyncio.to_thread(_work_of, Path(child.record.session))
        diff = None
        if child.record.isolation == "worktree":
            base = self._bases.get(child.record.call_id)
            if base is None:
                with contextlib.suppress(WorktreeError):
                    base = await make_worktree(self.config.workspace, Path(child.record.workspace))
            if base is not None:
                with contextlib.suppress(WorktreeError):
                    diff = await worktree_diff(Path(child.record.workspace), base)
        return ChildReport(
            name=child.name,
            session=child.record.session,
            result=result,
            work=work,
            tokens=child.tokens,
            cost_usd=child.cost_usd,
            detail=detail,
            workspace=child.record.workspace if child.record.isolation == "worktree" else None,
            diff=diff.diff if diff else None,
            diff_stat=diff.stat if diff else None,
        )

    def _resumable(self, child: Child) -> str:
        return f"its session stays resumable: pod chat --session {child.record.session}"

    def _links(self) -> ParentLinks:
        if self.links is None:
            raise RuntimeError("Children used before the parent pod linked them")
        return self.links

    # -- closing calls (cancel, a new message to a paused parent, shutdown) ---------------

    def closing(self, result: ToolResult) -> ToolResult:
        """The synthetic result of a ``task`` call closed while its child ran, made truthful:
        what the child had done; the child is cancelled and stopped meanwhile."""
        child = self.live.pop(result.call_id, None)
        record = self.records.get(result.call_id)
        if record is None:
            return result  # its child never started
        if child is not None:
            work = _work_of(Path(record.session))
            detail = "the parent's turn was closed"
            task = asyncio.ensure_future(self._cancel_and_stop(child))
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)
        else:
            work = _work_of(Path(record.session))
            detail = "the parent stopped while it ran; its session was left paused"
        report = ChildReport(
            name=record.name,
            session=record.session,
            result="interrupted",
            work=work,
            tokens=child.tokens if child is not None else 0,
            detail=detail,
        )
        return replace(result, content=interrupted_text(report))

    async def _cancel_and_stop(self, child: Child) -> None:
        await child.cancel()
        await child.stop()

    async def aclose(self) -> None:
        """Stop every child (the parent stops) and wait for their processes."""
        live, self.live = list(self.live.values()), {}
        await asyncio.gather(*(child.stop() for child in live), return_exceptions=True)
        if self._closing:
            await asyncio.wait(set(self._closing), timeout=30)


def _last_turn_result(session: Path) -> str:
    """How the child's last turn ended, from its session (``finished`` if it does not say)."""
    try:
        results = load_session(session).turn_results
    except SessionError:
        return "finished"
    return results[max(results)] if results else "finished"


def _work_of(session: Path) -> ChildWork:
    """The child's work from its session file (empty if it has none yet)."""
    if not session.exists():
        return ChildWork()
    try:
        return work_since_prompt(load_session(session).items)
    except SessionError:
        return ChildWork()
