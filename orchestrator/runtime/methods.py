"""Protocol methods: each becomes a machine event or a direct reply.

``get_status``, ``get_history`` and ``complete_files`` are answered from the pod's state;
every other method is an event for the lifecycle machine, which accepts it (and runs its
actions) or refuses it, and a refusal is answered with the protocol error code the machine
names (:data:`states.REJECTION_CODES`). Methods are handled one at a time, synchronously, so
no two ever interleave.

:class:`Methods` dispatches by a table, one handler per method of
:data:`orchestrator.protocol.requests.METHOD_NAMES`; a handler checks what only the runtime
can (a duplicate run, a full note queue, an unknown call id, a rewind's target) and asks the
machine's queries (:mod:`states.queries`) where it must know the state, never its names.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from statemachine.exceptions import TransitionNotAllowed

from orchestrator.adapters.session import SessionError, SessionWriteError
from orchestrator.capabilities.jobs import JobError
from orchestrator.capabilities.permissions.modes import ModeRefused
from orchestrator.core.history import SystemMessage
from orchestrator.core.notes import NotesFull
from orchestrator.core.rewind import RewindError, RewindPlan
from orchestrator.protocol import (
    AnswerElicitationParams,
    ClientIoResultParams,
    CompactParams,
    CompleteFilesParams,
    ErrorData,
    FileCompletionsData,
    ForkParams,
    KillJobParams,
    OfferClientIoParams,
    RewindParams,
    RunParams,
    SetBudgetParams,
    SetModelParams,
    SetModeParams,
    encode_event,
)
from orchestrator.runtime import model_choice
from orchestrator.runtime.client_io import ClientIo
from orchestrator.runtime.controller import Controller
from orchestrator.runtime.controller.prompt import refresh_commands
from orchestrator.runtime.fork import fork_items, fork_workspace, write_fork
from orchestrator.runtime.offload import off_loop
from orchestrator.runtime.stats import stats_data
from orchestrator.runtime.submit import run_segments
from states import REJECTION_CODES
from states.outcomes import is_stopped
from states.queries import AT_REST, REWIND_FROM, awaiting_approval, input_answerable

Reply = Callable[[bytes], None]

Handler = Callable[[str, Any, Any, Reply], None]
"""A method's handler: its name, its parsed params, the request's id, where to reply."""


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
        # Looked up when an alert is raised (a test's controller may have none).
        self.client_io = ClientIo(lambda *alert: self.controller.alert(*alert))
        """The client that serves the editor's files, when one offers (docs/protocol.md)."""
        self._aside_tasks: set[asyncio.Task[None]] = set()
        """Slow replies (rewind previews, forks) being worked out."""
        self.handlers: dict[str, Handler] = {
            "run": self._run,
            "notify": self._note,
            "pod_event": self._note,
            "resume": self._plain,
            "pause": self._plain,
            "cancel": self._plain,
            "shutdown": self._plain,
            "compact": self._compact,
            "rewind": self._rewind,
            "approve": self._approve_or_deny,
            "deny": self._approve_or_deny,
            "answer_elicitation": self._answer_elicitation,
            "set_budget": self._set_budget,
            "get_history": self._get_history,
            "get_status": self._get_status,
            "complete_files": self._complete_files,
            "fork": self._fork,
            "kill_job": self._kill_job,
            "set_mode": self._set_mode,
            "list_models": self._list_models,
            "set_model": self._set_model,
            "offer_client_io": self._offer_client_io,
            "client_io_result": self._client_io_result,
            "list_commands": self._list_commands,
            "subscribe": self._subscribe,
            "get_stats": self._get_stats,
        }
        """Every protocol method's handler (a test checks it covers :data:`METHOD_NAMES`)."""

    def handle(self, method: str, params: Any, request_id: Any, reply: Reply) -> None:
        """Handle one method; direct replies and refusals go to ``reply`` only."""
        self.handlers[method](method, params, request_id, reply)

    # -- direct methods: answered from the pod's state, in any state --------------------------

    def _get_status(self, method: str, params: Any, request_id: Any, reply: Reply) -> None:
        # The pod as it is now (a client may be asking about a transient state), told after
        # the records committed before it, as broadcasts are.
        c = self.controller
        line = encode_event("status", c.status_data(request_id))
        c.transcript.after_writes(lambda: reply(line), reply, len(line))

    def _get_history(self, method: str, params: Any, request_id: Any, reply: Reply) -> None:
        self.controller.transcript.after_writes(lambda: reply(self.history_line(request_id)), reply)

    def _complete_files(
        self, method: str, params: CompleteFilesParams, request_id: Any, reply: Reply
    ) -> None:
        candidates = self.controller.fs.complete(params.prefix, limit=params.limit)
        data = FileCompletionsData(prefix=params.prefix, candidates=candidates, id=request_id)
        reply(encode_event("file_completions", data))

    def _list_commands(self, method: str, params: Any, request_id: Any, reply: Reply) -> None:
        refresh_commands(self.controller)
        reply(encode_event("commands", self.controller.commands.listing(request_id)))

    def _get_stats(self, method: str, params: Any, request_id: Any, reply: Reply) -> None:
        # After the records committed before it, as ``get_status``: the turns it counts are
        # the ones on disk.
        self.controller.transcript.after_writes(
            lambda: reply(encode_event("stats", stats_data(self.controller, request_id))), reply
        )

    def _subscribe(self, method: str, params: Any, request_id: Any, reply: Reply) -> None:
        # The socket server answers it (:mod:`orchestrator.serving.replay` keeps the events);
        # this is reached only by a caller driving the pod without one.
        message = "subscribe is answered by the pod's socket server; this pod is not serving one"
        reply(
            encode_event("error", ErrorData(code="invalid_request", message=message, id=request_id))
        )

    # -- machine events: checked here where the machine cannot, then sent to it ---------------

    def _plain(self, method: str, params: Any, request_id: Any, reply: Reply) -> None:
        """A method that is the machine's event and nothing more (``resume``, ``pause``…)."""
        self._event(method, reply, request_id)

    def _run(self, method: str, params: RunParams, request_id: Any, reply: Reply) -> None:
        c = self.controller
        if params.request_id is not None:
            turn = c.request_turn(params.request_id)
            if turn is not None:
                message = (
                    f"run {params.request_id} was committed already (turn {turn}); not run again"
                )
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

    def _note(self, method: str, params: Any, request_id: Any, reply: Reply) -> None:
        """``notify`` and ``pod_event``: a note for the model, refused when the queue is full."""
        note = note_for(method, params)
        try:
            self.controller.notes.check(note)
        except NotesFull as exc:
            error = ErrorData(code="queue_full", message=str(exc), id=request_id)
            reply(encode_event("error", error))
            return
        self._event(method, reply, request_id, note=note)

    def _compact(self, method: str, params: CompactParams, request_id: Any, reply: Reply) -> None:
        self._event("compact", reply, request_id, focus=params.focus)

    def _approve_or_deny(self, method: str, params: Any, request_id: Any, reply: Reply) -> None:
        c = self.controller
        if awaiting_approval(c.state_id) and not c.approvals.waiting_for(params.id):
            error = ErrorData(
                code="invalid_request", message=c.approvals.unknown(params.id), id=request_id
            )
            reply(encode_event("error", error))
            return
        if method == "approve" and params.mode is not None and awaiting_approval(c.state_id):
            why = self._plan_mode_refusal(params.id, params.mode)
            if why is not None:
                self._refuse(reply, request_id, why)
                return
        extra = (
            {"scope": params.scope, "mode": params.mode}
            if method == "approve"
            else {"message": params.message, "asked": params.asked}
        )
        self._event(method, reply, request_id, call_id=params.id, **extra)

    def _plan_mode_refusal(self, call_id: str, mode: str) -> str | None:
        """Why an ``approve`` may not name ``mode`` for this call (only a plan's approval
        names a mode, and never ``plan`` or one wider than the configuration allows)."""
        c = self.controller
        if c.approvals.kind_of(call_id) != "plan":
            return f"'mode' applies only to a plan's approval; {call_id!r} is no plan"
        if mode == "plan":
            return "an approved plan leaves plan mode: name another mode, or none"
        return c.modes.refusal(mode) if c.modes is not None else None  # type: ignore[arg-type]

    def _set_mode(self, method: str, params: SetModeParams, request_id: Any, reply: Reply) -> None:
        """Switch the permission mode (from the next tool decision); the reply is the status,
        once the switch's record is on disk."""
        c = self.controller
        if c.modes is None:
            self._refuse(reply, request_id, "this pod has no permission policy to switch")
            return
        if is_stopped(c.machine.configuration_values):
            self._refuse(reply, request_id, "the pod has stopped: its mode no longer matters")
            return
        try:
            c.modes.switch(params.mode, "set_mode")
        except ModeRefused as exc:
            self._refuse(reply, request_id, str(exc))
            return
        line = encode_event("status", c.status_data(request_id))
        c.transcript.after_writes(lambda: reply(line), reply, len(line))

    def _list_models(self, method: str, params: Any, request_id: Any, reply: Reply) -> None:
        """The provider's models (asked over the network: aside, the pod answers meanwhile)."""

        async def listed() -> None:
            found, reason = await model_choice.list_models(self.controller)
            reply(
                encode_event(
                    "models", model_choice.models_data(self.controller, found, reason, request_id)
                )
            )

        self._aside(listed())

    def _set_model(
        self, method: str, params: SetModelParams, request_id: Any, reply: Reply
    ) -> None:
        """Change the model or its settings for the requests to come (docs/protocol.md);
        the reply is the status (``pending`` holds what waits for the next turn)."""
        c = self.controller
        if is_stopped(c.machine.configuration_values):
            self._refuse(reply, request_id, "the pod has stopped: its model no longer matters")
            return

        async def changed() -> None:
            listed: list[tuple[str, str]] | None = None
            if params.model is not None:
                found, reason = await model_choice.list_models(c)
                listed = None if reason else found
            why = model_choice.change_refusal(c, params, listed)
            if why is None and is_stopped(c.machine.configuration_values):
                why = "the pod has stopped: its model no longer matters"
            if why is not None:
                self._refuse(reply, request_id, why)
                return
            model_choice.set_model(c, params, idle=c.state_id in AT_REST)
            line = encode_event("status", c.status_data(request_id))
            c.transcript.after_writes(lambda: reply(line), reply, len(line))

        self._aside(changed())

    def _offer_client_io(
        self, method: str, params: OfferClientIoParams, request_id: Any, reply: Reply
    ) -> None:
        """This client serves the editor's files (or withdraws): the file tools use it from
        their next call. The reply is the status."""
        io = self.client_io
        io.offer(reply, params.files, params.terminal)
        self.controller.tools.client_files = io if io.serving else None
        self.controller.tools.client_terminal = io if io.serving_terminal else None
        reply(encode_event("status", self.controller.status_data(request_id)))

    def _client_io_result(
        self, method: str, params: ClientIoResultParams, request_id: Any, reply: Reply
    ) -> None:
        """The answer to a file request; an error when none is waiting for it."""
        why = self.client_io.answer(params)
        if why is not None:
            self._refuse(reply, request_id, why)

    def _set_budget(
        self, method: str, params: SetBudgetParams, request_id: Any, reply: Reply
    ) -> None:
        """Replace the caps the params name (null: no cap); the machine says in which states
        (not while stopping). The reply is the status with the new caps; a turn the budget
        paused goes on with ``resume``."""
        changes = {key: getattr(params, key) for key in params.model_fields_set}
        if not changes:
            self._refuse(reply, request_id, "name budget_usd or turn_budget_usd (null: no cap)")
            return
        c = self.controller
        if not self._event("set_budget", reply, request_id):
            return
        why = c.set_budget(changes)
        if why is not None:
            self._refuse(reply, request_id, why)
            return
        line = encode_event("status", c.status_data(request_id))
        c.transcript.after_writes(lambda: reply(line), reply, len(line))

    def _answer_elicitation(
        self, method: str, params: AnswerElicitationParams, request_id: Any, reply: Reply
    ) -> None:
        c = self.controller
        if input_answerable(c.state_id) and c.input_waiting():
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

    def _rewind(self, method: str, params: RewindParams, request_id: Any, reply: Reply) -> None:
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

    def _fork(self, method: str, params: ForkParams, request_id: Any, reply: Reply) -> None:
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

    def _kill_job(self, method: str, params: KillJobParams, request_id: Any, reply: Reply) -> None:
        """End a background job (in any state: jobs belong to the pod, not the turn); the
        reply is the status once it has ended."""
        job_id = params.id
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

    def _event(self, event: str, reply: Reply, request_id: Any, **kwargs: Any) -> bool:
        """Send ``event`` to the machine; False (and the refusal replied) when it refuses."""
        try:
            self.controller.machine.send(event, **kwargs)
            return True
        except TransitionNotAllowed:
            error = ErrorData(
                code=REJECTION_CODES.get(event, "invalid_request"),  # type: ignore[arg-type]
                message=f"cannot {event} while {self.controller.state_id}",
                id=request_id,
            )
            reply(encode_event("error", error))
            return False

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
