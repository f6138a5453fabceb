"""Protocol methods: each becomes a machine event or a direct reply.

``get_status``, ``get_history`` and ``complete_files`` are answered from the pod's state;
every other method is an event for the lifecycle machine, which accepts it (and runs its
actions) or refuses it, and a refusal is answered with the protocol error code the machine
names (:data:`states.REJECTION_CODES`). Methods are handled one at a time, synchronously, so
no two ever interleave.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from statemachine.exceptions import TransitionNotAllowed

from orchestrator.adapters.session import SessionError, SessionWriteError
from orchestrator.capabilities.jobs import JobError
from orchestrator.core.history import SystemMessage
from orchestrator.core.notes import NotesFull
from orchestrator.core.rewind import RewindError, RewindPlan
from orchestrator.protocol import (
    ErrorData,
    FileCompletionsData,
    ForkParams,
    RewindParams,
    encode_event,
)
from orchestrator.runtime.controller import Controller
from orchestrator.runtime.fork import fork_items, fork_workspace, write_fork
from orchestrator.runtime.offload import off_loop
from orchestrator.runtime.submit import run_segments
from states import REJECTION_CODES

Reply = Callable[[bytes], None]

REWIND_FROM = ("idle", "paused")
"""Where a rewind is checked before the machine sees it (elsewhere the machine refuses it)."""


def note_for(method: str, params: Any) -> SystemMessage:
    """The system note a ``notify`` or ``pod_event`` becomes."""
    if method == "notify":
        return SystemMessage(text=f"[Notification] {params.message}", origin="notify")
    detail = f": {params.message}" if params.message else ""
    return SystemMessage(
        text=f"[Pod event] child pod {params.pod!r} {params.kind}{detail}", origin="pod_event"
    )


class Methods:
    """Dispatches parsed protocol methods for one pod."""

    def __init__(self, controller: Controller) -> None:
        self.controller = controller
        self._aside_tasks: set[asyncio.Task[None]] = set()
        """Slow replies (rewind previews, forks) being worked out."""

    def handle(self, method: str, params: Any, request_id: Any, reply: Reply) -> None:
        """Handle one method; direct replies and refusals go to ``reply`` only."""
        c = self.controller
        if method == "get_status":
            # The pod as it is now (a client may be asking about a transient state), told
            # after the records committed before it, as broadcasts are.
            line = encode_event("status", c.status_data(request_id))
            c.transcript.after_writes(lambda: reply(line))
        elif method == "get_history":
            c.transcript.after_writes(lambda: reply(self.history_line(request_id)))
        elif method == "complete_files":
            candidates = c.fs.complete(params.prefix, limit=params.limit)
            data = FileCompletionsData(prefix=params.prefix, candidates=candidates, id=request_id)
            reply(encode_event("file_completions", data))
        elif method == "run":
            if params.request_id is not None:
                turn = c.request_turn(params.request_id)
                if turn is not None:
                    message = f"run {params.request_id} was committed already (turn {turn}); not run again"
                    reply(
                        encode_event(
                            "error", ErrorData(code="duplicate", message=message, id=request_id)
                        )
                    )
                    return
            segments = run_segments(params.segments, exists=c.fs.exists)
            self._event(
                "run", reply, request_id, segments=segments, client_request_id=params.request_id
            )
        elif method in ("notify", "pod_event"):
            note = note_for(method, params)
            try:
                c.notes.check(note)
            except NotesFull as exc:
                error = ErrorData(code="queue_full", message=str(exc), id=request_id)
                reply(encode_event("error", error))
                return
            self._event(method, reply, request_id, note=note)
        elif method == "compact":
            self._event("compact", reply, request_id, focus=params.focus)
        elif method == "rewind":
            self._rewind(params, request_id, reply)
        elif method == "fork":
            self._fork(params, request_id, reply)
        elif method == "kill_job":
            self._kill_job(params.id, request_id, reply)
        elif method in ("approve", "deny"):
            if c.state_id == "awaiting_approval" and not c.approvals.waiting_for(params.id):
                error = ErrorData(
                    code="invalid_request", message=c.approvals.unknown(params.id), id=request_id
                )
                reply(encode_event("error", error))
                return
            extra = (
                {"scope": params.scope}
                if method == "approve"
                else {"message": params.message, "asked": params.asked}
            )
            self._event(method, reply, request_id, call_id=params.id, **extra)
        elif method == "answer_elicitation":
            if c.state_id in ("awaiting_input", "awaiting_approval") and c.input_waiting():
                why = c.elicitations.check(params.id, params.action, params.content)
                if why is not None:
                    error = ErrorData(code="invalid_request", message=why, id=request_id)
                    reply(encode_event("error", error))
                    return
            self._event(
                method,
                reply,
                request_id,
                input_id=params.id,
                action=params.action,
                content=params.content,
            )
        else:
            self._event(method, reply, request_id)

    def _rewind(self, params: RewindParams, request_id: Any, reply: Reply) -> None:
        """Check the rewind now (a bad seq changes nothing, a paused turn stays open), then
        preview it or hand it to the machine."""
        c = self.controller
        if c.state_id not in REWIND_FROM:
            self._event("rewind", reply, request_id)  # refused with the machine's code
            return
        try:
            plan = c.plan_rewind(params.to, params.restore)
        except RewindError as exc:
            reply(
                encode_event(
                    "error", ErrorData(code="invalid_request", message=str(exc), id=request_id)
                )
            )
            return
        if params.dry_run:
            self._aside(self._preview(plan, request_id, reply))
            return
        self._event("rewind", reply, request_id, to=plan.target.seq, restore=plan.restore)

    async def _preview(self, plan: RewindPlan, request_id: Any, reply: Reply) -> None:
        try:
            data = await self.controller.preview_rewind(plan)
        except Exception as exc:  # the store's errors, said to the one who asked
            error = ErrorData(code="invalid_request", message=f"no preview: {exc}", id=request_id)
            reply(encode_event("error", error))
            return
        reply(encode_event("rewind_preview", data.model_copy(update={"id": request_id})))

    def _fork(self, params: ForkParams, request_id: Any, reply: Reply) -> None:
        """Check the fork now; write it on a worker thread (a long session is thousands of
        synced lines, which must not hold the event loop)."""
        c = self.controller
        try:
            items = fork_items(c.transcript, params.at)
        except (RewindError, SessionWriteError) as exc:
            self._refuse(reply, request_id, str(exc))
            return
        source = c.transcript.session.path
        self._aside(self._write_fork(items, source, params, request_id, reply))

    async def _write_fork(
        self, items: list[Any], source: Path, params: ForkParams, request_id: Any, reply: Reply
    ) -> None:
        own = self.controller.config.workspace
        try:
            forked = await off_loop(
                lambda: write_fork(
                    items,
                    source,
                    fork_workspace(params.workspace, own),
                    at=params.at,
                    title=params.name,
                )
            )
        except (SessionError, OSError) as exc:
            self._refuse(reply, request_id, f"no fork: {exc}")
            return
        reply(encode_event("forked", forked.model_copy(update={"id": request_id})))

    def _kill_job(self, job_id: str, request_id: Any, reply: Reply) -> None:
        """End a background job (in any state: jobs belong to the pod, not the turn); the
        reply is the status once it has ended."""
        jobs = self.controller.jobs
        if jobs is None:
            self._refuse(reply, request_id, "this pod runs no background jobs")
            return
        try:
            job = jobs.get(job_id)
        except JobError as exc:
            self._refuse(reply, request_id, str(exc))
            return
        if not job.running:
            self._refuse(reply, request_id, f"job {job_id} is not running ({jobs.state_text(job)})")
            return
        self._aside(self._killed(job_id, request_id, reply))

    async def _killed(self, job_id: str, request_id: Any, reply: Reply) -> None:
        jobs = self.controller.jobs
        assert jobs is not None
        await jobs.kill(job_id)
        reply(encode_event("status", self.controller.status_data(request_id)))

    @staticmethod
    def _refuse(reply: Reply, request_id: Any, message: str) -> None:
        reply(
            encode_event("error", ErrorData(code="invalid_request", message=message, id=request_id))
        )

    def _aside(self, work: Coroutine[Any, Any, None]) -> None:
        """Run a reply's slow part in a task of its own (held, so none is collected half-way)."""
        task = asyncio.get_running_loop().create_task(work)
        self._aside_tasks.add(task)
        task.add_done_callback(self._aside_tasks.discard)

    def _event(self, event: str, reply: Reply, request_id: Any, **kwargs: Any) -> None:
        try:
            self.controller.machine.send(event, **kwargs)
        except TransitionNotAllowed:
            error = ErrorData(
                code=REJECTION_CODES.get(event, "invalid_request"),  # type: ignore[arg-type]
                message=f"cannot {event} while {self.controller.state_id}",
                id=request_id,
            )
            reply(encode_event("error", error))

    def greeting(self) -> str:
        """One line saying which pod this is and what it runs on."""
        c = self.controller
        greeting = f"pod {c.config.pod_name()} · {c.provider.name}/{c.provider.model}"
        if c.provider.name == "scripted":
            greeting += " · offline: no ANTHROPIC_API_KEY, answers come from the scripted provider"
        return greeting

    def history_line(self, request_id: Any = None) -> bytes:
        """The ``history`` reply: every committed item, the greeting, start-up alerts."""
        extra: dict[str, Any] = {"greeting": self.greeting()}
        if request_id is not None:
            extra["id"] = request_id
        return self.controller.transcript.history_line(extra)
