"""The controller: the lifecycle machine's actions and the turn task.

The machine (``states.PodLifecycle``) calls the methods of the :class:`states.LifecycleModel`
surface here; each is short and hands history surgery to the pure functions of
:mod:`orchestrator.core.repair` and commits through the :class:`~orchestrator.runtime.transcript.Transcript`.
The turn task runs :class:`~orchestrator.runtime.turn.Turn`; how it ended is reported to the machine
from the task's done callback, and the machine decides what that means. Protocol methods reach
the machine through :mod:`orchestrator.runtime.methods`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from orchestrator.adapters.mcp.elicitations import Action, Elicitations
from orchestrator.adapters.providers.base import Provider, ProviderError
from orchestrator.adapters.scoped_fs import ScopedFS
from orchestrator.adapters.session import (
    CheckpointRecord,
    HeldNote,
    HeldPrompt,
    HeldPromptRecord,
    RewindRecord,
    RewindRestore,
    SessionWriteError,
    SpendRecord,
    UnloadRecord,
)
from orchestrator.capabilities.checkpoints import CheckpointError
from orchestrator.capabilities.hooks import HookEvent
from orchestrator.capabilities.hooks.chain import InterceptorChain
from orchestrator.capabilities.permissions.approvals import Answer, Approvals
from orchestrator.config.mcp import READ_RESOURCE_TOOL
from orchestrator.config.model import PodConfig
from orchestrator.core.history import (
    AssistantMessage,
    Compaction,
    Item,
    SystemMessage,
    ToolUseBlock,
    UserMessage,
    item_from_json,
    item_to_json,
)
from orchestrator.core.interceptors import Cancel, ContinueWith
from orchestrator.core.notes import NoteQueue
from orchestrator.core.repair import (
    close_orphans,
    interrupt_note,
    pending_tool_calls,
)
from orchestrator.core.rewind import RewindError, RewindPlan, plan_rewind
from orchestrator.core.segments import FileRefSegment, Segment
from orchestrator.core.thinking import ThinkingPlan, ThinkingRefused
from orchestrator.core.usage import TokenUsage
from orchestrator.core.validator import IncrementalValidator
from orchestrator.protocol import (
    ErrorData,
    RewindData,
    RewindFilesData,
    RunEndData,
    StatusData,
    TurnEndData,
    TurnStartData,
)
from orchestrator.runtime.compaction import (
    CompactionError,
    CompactionNotSmaller,
    CompactionRequest,
    Compactor,
)
from orchestrator.runtime.context import OFF_LOOP_ITEMS, Context, usage_of
from orchestrator.runtime.file_refs import preread_files, resolve_segments, synthetic_read_items
from orchestrator.runtime.offload import off_loop
from orchestrator.runtime.pod_task import Outcome, PodTask
from orchestrator.runtime.status import StatusBoard
from orchestrator.runtime.submit import Submission, resolve_submission
from orchestrator.runtime.tool_runner import ToolRunner
from orchestrator.runtime.transcript import Transcript
from orchestrator.runtime.turn import Turn, TurnError
from states import PodLifecycle, leaf_state

if TYPE_CHECKING:
    from orchestrator.capabilities.jobs import Jobs
    from orchestrator.capabilities.subpods.children import Children
    from orchestrator.runtime.checkpointing import Checkpointer

log = logging.getLogger(__name__)


def rewind_data(plan: RewindPlan, files: RewindFilesData | None) -> RewindData:
    """A rewind as clients see it (``rewind_preview`` and ``rewound`` carry the same)."""
    return RewindData(
        to=plan.target.seq,
        restore=plan.restore,
        prompt=plan.target.text,
        dropped=plan.dropped if plan.conversation else 0,
        files=files,
    )


def held_record(submission: Submission, turn: int) -> HeldPromptRecord:
    """The record of a prompt held for its ``UserPromptSubmit`` hooks."""
    return HeldPromptRecord(
        phase="held",
        turn=turn,
        message=item_to_json(submission.message()),
        attach=[item_to_json(item) for item in submission.attach],
        preread=[segment.model_dump(mode="json") for segment in submission.preread],
    )


def held_submission(record: HeldPromptRecord) -> Submission:
    """A held prompt read back from its record (the pod stopped before the hooks decided)."""
    message = item_from_json(record.message or {})
    assert isinstance(message, UserMessage)
    return Submission(
        segments=list(message.segments),
        text=message.text,
        attach=[item_from_json(item) for item in record.attach],
        preread=[FileRefSegment.model_validate(segment) for segment in record.preread],
        request_id=message.request_id,
    )


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _changes_files(tool: Any) -> bool:
    """Whether a call of ``tool`` may change the workspace (unknown tools may)."""
    return tool is None or bool(getattr(tool, "side_effects", True))


class Controller:
    """Owns one pod's lifecycle machine, history and turn task."""

    def __init__(
        self,
        *,
        config: PodConfig,
        provider: Provider,
        tools: ToolRunner,
        fs: ScopedFS,
        transcript: Transcript,
        system_prompt: str,
        context: Context,
        approvals: Approvals,
        start_paused: bool = False,
        interceptors: InterceptorChain,
        on_stopped: Callable[[], None] | None = None,
        upward: Callable[[str, str], None] | None = None,
        checkpoints: Checkpointer | None = None,
        jobs: Jobs | None = None,
        held_prompt: HeldPromptRecord | None = None,
    ) -> None:
        self.config = config
        self.provider = provider
        self.tools = tools
        self.fs = fs
        self.transcript = transcript
        self.history = transcript.history
        self.system_prompt = system_prompt
        self.interceptors = interceptors
        self.on_stopped = on_stopped
        self.upward = upward
        self.notes = NoteQueue()
        self.context = context
        self.approvals = approvals
        self.elicitations = Elicitations(emit=self.emit)
        """Requests for input of MCP servers, waiting for a person (``[mcp] elicitation``)."""
        self.compactor = Compactor(
            config=config, context=context, provider=provider, fs=fs, commit=self.commit
        )
        self._compaction_request: CompactionRequest | None = None
        self.checkpoints = checkpoints
        """Snapshots of the workspace (None: off by config)."""
        self.subpods: Children | None = None
        """The child pods of ``task`` calls (None: the pod offers no ``task``)."""
        self._rewind_request: tuple[int | None, RewindRestore] | None = None
        self._prompt_seq: int | None = None
        """The seq of the open turn's user message, until its checkpoint is taken."""
        self._turn_snapshot: asyncio.Future[CheckpointRecord | None] | None = None
        """The turn's snapshot while it is being taken."""
        self._turn_is_open = start_paused
        self.session_usage = usage_of(self.history.items)
        self.turn_usage = TokenUsage()
        if start_paused:  # the paused turn's spending so far counts against its budget
            turn = self.history.turn
            self.turn_usage = usage_of([i for i in self.history.items if i.turn == turn])
        self._submission: Submission | None = None
        self._session_start: asyncio.Future[list[SystemMessage]] | None = None
        """What the ``SessionStart`` hooks will add, while they run."""
        self._session_context: list[SystemMessage] = []
        """What ``SessionStart`` hooks of an unloaded pod added, for its next turn."""
        self._job_notes: list[SystemMessage] = []
        """What an unloaded pod had to tell of background jobs that ended, for its next turn."""
        self._unsubmitted: Submission | None = (
            held_submission(held_prompt) if held_prompt is not None else None
        )
        """The open turn's prompt while its ``UserPromptSubmit`` hooks have not passed it
        (kept across a pause: Resume asks them again; the turn's end drops it, saying so)."""
        self._preread: list[FileRefSegment] = []
        """Refs the open turn still has to pre-read (kept across a pause)."""
        self.task = PodTask(self._report)
        self._validator = IncrementalValidator()
        self.thinking: ThinkingPlan | None = None
        """Decided from the model's capabilities at the first turn (see learn_window)."""
        self.thinking_refused: str | None = None
        self.board = StatusBoard(self)
        self.machine = PodLifecycle(
            model=self,
            start_value="paused" if start_paused else None,
            listeners=[self.board],
        )
        self.board.start()
        self.jobs = jobs
        """The pod's background jobs (None: a pod built without them, in tests)."""
        if jobs is not None:
            jobs.on_change = self.board.jobs_changed

    # -- events --------------------------------------------------------------------------

    def emit(self, event: str, data: BaseModel | dict[str, Any]) -> None:
        """Broadcast one event to every client."""
        self.transcript.emit(event, data)

    def alert(self, level: str, source: str, message: str) -> None:
        """Broadcast an alert a person should see."""
        self.transcript.alert(level, source, message)

    @property
    def state_id(self) -> str:
        """The innermost active state of the machine."""
        return leaf_state(frozenset(self.machine.configuration_values))

    def status_changed(self) -> None:
        """Broadcast ``status`` if it changed."""
        self.board.changed()

    def status_data(self, request_id: Any = None) -> StatusData:
        """The ``status`` event payload."""
        return self.board.data(request_id)

    # -- spending outside the conversation ------------------------------------------------

    def spend(self, usage: TokenUsage, source: str) -> None:
        """Count tokens the pod's key spent outside the conversation's own requests (an MCP
        server's sampling request) as the turn's, and keep them in the session file so the
        usage and cost survive a reload."""
        self.session_usage += usage
        self.turn_usage += usage
        self.transcript.keep(
            SpendRecord(
                turn=self.history.turn,
                source=source,
                usage=dataclasses.asdict(usage),
                at_ms=int(time.time() * 1000),
            )
        )

    def count_spent(self, spends: list[SpendRecord]) -> None:
        """Add what a loaded session's ``spend`` records say (a paused turn's to its turn)."""
        fields = {f.name for f in dataclasses.fields(TokenUsage)}
        for spend in spends:
            usage = TokenUsage(**{k: v for k, v in spend.usage.items() if k in fields})
            self.session_usage += usage
            if self._turn_is_open and spend.turn == self.history.turn:
                self.turn_usage += usage

    # -- committing -----------------------------------------------------------------------

    def commit(self, item: Item) -> Item:
        """Commit through the transcript: on disk, then in history, then announced."""
        stored = self.transcript.commit(item)
        usage = getattr(stored, "usage", None)
        if usage is not None:
            self.session_usage += usage
            self.turn_usage += usage
            if isinstance(stored, AssistantMessage):
                self.context.observe(usage)
        if isinstance(stored, Compaction):
            # The view's prefix changed anyway: prune now what waited for a step.
            bound = self.context.prune_at_compaction()
            if bound is not None:
                self._move_prune_bound(bound, 0)
        return stored

    async def wire_messages(self) -> list[dict[str, Any]]:
        """Wire messages for the next request: the context's view, pruned in steps."""
        # Deciding a prune step sizes every old result: off the loop for a long view.
        long = len(self.context.view()) > OFF_LOOP_ITEMS
        move = await off_loop(self.context.prune_move) if long else self.context.prune_move()
        if move is not None:
            self._move_prune_bound(*move)
        # Never ask the model about a history the session file does not hold.
        await self.transcript.settled()
        return await self.context.prepared_messages()

    def _move_prune_bound(self, bound: int, tokens: int) -> None:
        self.transcript.record_prune(bound, tokens)
        self.context.apply_prune(bound)

    def take_compaction_request(self) -> CompactionRequest | None:
        """A compaction asked for since the last round boundary (and forget it)."""
        request, self._compaction_request = self._compaction_request, None
        return request

    async def learn_window(self) -> None:
        """Make sure the model's window and thinking plan are known (asks the provider once);
        :class:`TurnError` before any request when the model refuses the thinking settings."""
        await self.context.learn_window(self.provider, self.alert)
        if self.thinking is None and self.thinking_refused is None:
            await self._learn_thinking()
        if self.thinking_refused is not None:
            raise TurnError(self.thinking_refused, code="invalid_request")

    async def _learn_thinking(self) -> None:
        try:
            capabilities = await self.provider.thinking_capabilities()
        except ProviderError as exc:
            capabilities = None
            if self.config.thinking == "auto":
                self.alert("info", "thinking", f"thinking stays off: {exc}")
        try:
            plan = self.config.thinking_plan(capabilities)
        except ThinkingRefused as exc:
            self.thinking_refused = str(exc)
            self.alert("error", "thinking", self.thinking_refused)
        else:
            self.thinking = plan
            # The pre-send validator checks the rules that hold only with thinking on.
            self._validator.thinking = plan.on
        self.board.changed()

    @property
    def thinking_plan(self) -> ThinkingPlan:
        """What the requests ask for (nothing until the model's capabilities are known)."""
        return self.thinking or ThinkingPlan()

    def signal(self, event: str) -> None:
        """A round event from the turn loop."""
        self.machine.send(event)

    # -- machine actions (states.LifecycleModel) -------------------------------------------

    def stash_file_refs(
        self, segments: list[Segment], client_request_id: str | None = None
    ) -> None:
        """Resolve the submit's refs now; failures become alerts and placeholders.
        ``client_request_id``: the ``run``'s, kept on its user message."""
        servers = self.board.mcp
        # Only where read_mcp_resource is offered (a server with resources, permissions).
        readable = (
            [s.name for s in servers.servers if s.has_resources and s.status == "running"]
            if servers is not None and self.tools.registry.get(READ_RESOURCE_TOOL) is not None
            else []
        )
        submission = resolve_submission(
            segments, fs=self.fs, config=self.config, mcp_readable=readable
        )
        submission = dataclasses.replace(submission, request_id=client_request_id)
        for alert in submission.alerts:
            self.alert(alert.level, alert.source, alert.message)
        self._submission = submission

    def request_turn(self, request_id: str) -> int | None:
        """The turn a ``run`` with this client request id committed its user message in, or
        holds its prompt in (hooks deciding); None when no such run is in the session.

        A scan, not an index: a ``run`` is rare next to its rounds, and a rewind that drops
        the message makes the id new again, as the conversation it went with is gone."""
        held = self._unsubmitted
        if held is not None and held.request_id == request_id:
            return self.history.turn
        for item in reversed(self.transcript.view()):
            if isinstance(item, UserMessage) and item.request_id == request_id:
                return item.turn
        return None

    def start_turn(self) -> None:
        """Begin a turn: notes, the user message and its refs, then the turn task."""
        try:
            self._begin_turn()
        except Exception as exc:
            # The machine is already in running: a turn task must exist to lead it out again.
            log.exception("starting the turn failed")
            self._launch(failure=f"internal error starting the turn: {type(exc).__name__}: {exc}")

    def _begin_turn(self) -> None:
        turn = self.history.new_turn()
        self._turn_is_open = True
        self.turn_usage = TokenUsage()
        self.emit("turn_start", TurnStartData(turn=turn))
        self.inject_queued_notes()
        submission, self._submission = self._submission, None
        cancelled: str | None = None
        if submission is not None and self.interceptors.has(HookEvent.USER_PROMPT_SUBMIT):
            # Commands take time: the turn task asks them, and commits the prompt after. The
            # held prompt is on disk first, so a pod that stops meanwhile still has it.
            self._unsubmitted = submission
            self.transcript.record(held_record(submission, turn))
        elif submission is not None:
            message = submission.message()
            action = self.interceptors.prompt_submit(message)
            if isinstance(action, Cancel):
                cancelled = action.reason
                self.alert("warn", "prompt_submit", f"submit cancelled: {action.reason}")
            else:
                self._prompt_seq = self.commit(message).seq
                extra = action.items if isinstance(action, ContinueWith) else ()
                for item in [*submission.attach, *extra]:
                    self.commit(item)
                self._preread = submission.preread
        self._launch(cancelled=cancelled)

    def start_session_hooks(self, source: str) -> None:
        """Run the ``SessionStart`` hooks (``startup`` or ``resume``) while the pod serves;
        the first turn waits for what they add."""
        if self.interceptors.has(HookEvent.SESSION_START):
            self._session_start = asyncio.ensure_future(self.interceptors.session_start(source))

    async def close_hooks(self) -> None:
        """End hook commands still running with nobody waiting for them (the pod stops)."""
        pending, self._session_start = self._session_start, None
        if pending is not None and not pending.done():
            pending.cancel()
            await asyncio.wait([pending])
        if self.interceptors.commands is not None:
            await self.interceptors.commands.aclose()

    async def _add_session_context(self) -> None:
        """Commit what the ``SessionStart`` hooks printed, once they are done (shielded: a
        pause of the turn does not end them)."""
        kept, self._session_context = self._session_context, []
        for note in kept:
            self.commit(note)
        pending = self._session_start
        if pending is None:
            return
        try:
            notes = await asyncio.shield(pending)
        except asyncio.CancelledError:
            if not pending.done():
                raise  # the turn was interrupted; the hooks go on, the next turn waits again
            notes = []
        except Exception as exc:  # a failure here must not fail the turn
            log.warning("SessionStart hooks failed", exc_info=True)
            self.alert("warn", "hooks", f"SessionStart hooks failed: {type(exc).__name__}: {exc}")
            notes = []
        self._session_start = None
        for note in notes:
            self.commit(note)

    async def _submit_held_prompt(self) -> bool:
        """Ask the ``UserPromptSubmit`` hooks about the held prompt, then commit it and what
        they added; False when they refused it (the turn ends, nothing committed)."""
        submission = self._unsubmitted
        if submission is None:
            return True
        message = submission.message()
        action = await self.interceptors.user_prompt_submit(message)
        self._unsubmitted = None
        turn = self.history.turn
        if isinstance(action, Cancel):
            self.transcript.record(HeldPromptRecord(phase="done", turn=turn))
            self.alert("warn", "prompt_submit", f"submit cancelled: {action.reason}")
            return False
        self._prompt_seq = self.commit(message).seq
        extra = action.items if isinstance(action, ContinueWith) else ()
        for item in [*submission.attach, *extra]:
            self.commit(item)
        self._preread = submission.preread
        self.transcript.record(HeldPromptRecord(phase="done", turn=turn))
        return True

    def resume_turn(self) -> None:
        """Run the paused turn again from where its history stands."""
        self.emit("turn_start", TurnStartData(turn=self.history.turn, resumed=True))
        if not pending_tool_calls(self.history.items):
            self.inject_queued_notes()
        self._launch()

    def interrupt_turn(self) -> None:
        """Cancel the turn task; its wrapper reports the outcome to the machine."""
        if self.elicitations.waiting():
            # A request for input waits in a task of the MCP server's, not the turn's: said
            # over before the turn can end (a shutdown would close every connection first),
            # and after this transition's status (scheduled ahead of the task's cancellation).
            asyncio.get_running_loop().call_soon(self.elicitations.withdraw_all)
        self.task.interrupt()

    def close_orphans(self) -> None:
        """Answer unanswered tool calls with synthetic ``[Interrupted by user]`` results."""
        for result in close_orphans(self.transcript.view()):
            if self.subpods is not None:
                result = self.subpods.closing(result)  # says what the call's child had done
            self.commit(result)

    def inject_interrupt_note(self) -> None:
        """Tell the model its previous turn was interrupted."""
        self.commit(interrupt_note())

    def queue_note(self, note: SystemMessage) -> None:
        """Keep a notify / pod_event note for the next round boundary."""
        self.notes.add(note)

    def inject_queued_notes(self) -> None:
        """Commit queued notes as system messages."""
        for note in self.notes.take():
            self.commit(note)
        kept, self._job_notes = self._job_notes, []
        for note in kept:
            self.commit(note)
        if self.jobs is not None:
            # Background jobs that ended (or a crash ended) since the model last heard.
            for note in self.jobs.take_notes():
                self.commit(note)
            self.jobs.delivered()

    # -- unloading ----------------------------------------------------------------------------

    def held(self) -> UnloadRecord:
        """What lives only in memory and an unload must keep (see :mod:`orchestrator.runtime.unload`);
        nothing is taken from the pod."""
        prompt = self._unsubmitted
        session_context = list(self._session_context)
        pending = self._session_start
        finished = pending is not None and pending.done() and not pending.cancelled()
        if pending is not None and finished and pending.exception() is None:
            session_context += pending.result()
        job_note = self.jobs.untold_note() if self.jobs is not None else None
        return UnloadRecord(
            at_ms=int(time.time() * 1000),
            turn=self.history.turn,
            paused=self._turn_is_open,
            notes=[HeldNote(note=note, repeats=n) for note, n in self.notes.waiting()],
            preread=list(self._preread),
            prompt=HeldPrompt(
                segments=prompt.segments,
                text=prompt.text,
                attach=prompt.attach,
                preread=prompt.preread,
                request_id=prompt.request_id,
            )
            if prompt is not None
            else None,
            prompt_seq=self._prompt_seq,
            session_context=session_context,
            job_notes=[*self._job_notes, *([job_note] if job_note is not None else [])],
            touched=sorted(self.checkpoints.touched) if self.checkpoints is not None else [],
            hook_pins=commands.runner.pins() if (commands := self.interceptors.commands) else {},
        )

    def unfinished_work(self) -> list[str]:
        """Work of the pod's own, outside any task, that is not done yet (an unload waits)."""
        out: list[str] = []
        if self._session_start is not None and not self._session_start.done():
            out.append("SessionStart hooks are running")
        if self._turn_snapshot is not None and not self._turn_snapshot.done():
            out.append("a workspace snapshot is being taken")
        return out

    def restore(self, held: UnloadRecord) -> None:
        """Take back what :meth:`held` kept when this session's pod was unloaded."""
        turn_state = held.notes or held.preread or held.prompt or held.prompt_seq is not None
        if turn_state and not self._turn_is_open:
            # Only a paused turn holds these, and a load finds the turn closed: never silently.
            self.alert(
                "warn",
                "pod",
                "the session was unloaded with a paused turn's notes or file refs, but its "
                "turn is closed now; they were dropped",
            )
        elif turn_state:
            for kept in held.notes:
                self.notes.put_back(kept.note, kept.repeats)
            self._preread = list(held.preread)
            if held.prompt is not None:
                self._unsubmitted = Submission(
                    segments=list(held.prompt.segments),
                    text=held.prompt.text,
                    attach=list(held.prompt.attach),
                    preread=list(held.prompt.preread),
                    request_id=held.prompt.request_id,
                )
            self._prompt_seq = held.prompt_seq
        self._session_context = list(held.session_context)
        self._job_notes = list(held.job_notes)
        if self.checkpoints is not None:
            self.checkpoints.touched.update(held.touched)
        if self.interceptors.commands is not None:
            # The fingerprints of the pod's first start, not this load's: a hook script
            # changed while the pod was unloaded is still a changed one.
            self.interceptors.commands.runner.keep_pins(held.hook_pins)

    def has_queued_notes(self) -> bool:
        """Whether notes wait for a turn."""
        return bool(self.notes)

    def request_compaction(self, focus: str | None = None) -> None:
        """Compact at the next chance: now between turns, or at the next round boundary."""
        self._compaction_request = CompactionRequest(trigger="manual", focus=focus)

    def start_compaction(self) -> None:
        """Launch a compaction between turns; the machine waits in ``compacting``."""
        # The request is taken now, not when the task first runs: an interrupt read in the same
        # write cancels the task before its first step, and a request left behind would start
        # the compaction again the moment the machine is back in idle.
        request = self.take_compaction_request() or CompactionRequest(trigger="manual")
        self.task.start(
            self._drive_compaction(request),
            interrupted=("compaction_failed", None),
            name=f"compaction-{self.history.turn}",
        )

    def request_rewind(self, to: int | None = None, restore: RewindRestore = "both") -> None:
        """Remember where the rewind goes (checked already by the ``rewind`` method)."""
        self._rewind_request = (to, restore)

    def start_rewind(self) -> None:
        """Launch the rewind; the machine waits in ``rewinding`` until it is done."""
        to, restore = self._rewind_request or (None, "both")
        self._rewind_request = None
        self.task.start(
            self._drive_rewind(to, restore), interrupted=("rewind_failed", None), name="rewind"
        )

    def plan_rewind(self, to: int | None, restore: RewindRestore) -> RewindPlan:
        """Check a rewind against the conversation and its checkpoints (RewindError)."""
        if restore != "conversation" and self.checkpoints is None:
            raise RewindError(
                "cannot restore files: workspace checkpoints are off (checkpoints = false); "
                "rewind the conversation only"
            )
        records = self.checkpoints.records if self.checkpoints is not None else []
        return plan_rewind(self.transcript.view(), records, to, restore)

    async def preview_rewind(self, plan: RewindPlan) -> RewindData:
        """What the rewind would change, changing nothing."""
        files = None
        if plan.code and plan.checkpoint is not None and self.checkpoints is not None:
            files = await self.checkpoints.preview(plan.checkpoint.id)
        return rewind_data(plan, files)

    async def _drive_rewind(self, to: int | None, restore: RewindRestore) -> Outcome:
        """Restore files (intent first, so a crash replays it), record, then drop the tail."""
        intent = False
        try:
            plan = self.plan_rewind(to, restore)
            files = None
            if plan.code and plan.checkpoint is not None and self.checkpoints is not None:
                record = RewindRecord(
                    phase="intent",
                    to_seq=plan.target.seq,
                    restore=plan.restore,
                    checkpoint=plan.checkpoint.id,
                )
                self.transcript.record(record)
                intent = True
                files, before = await self.checkpoints.restore(plan.checkpoint.id)
                self.transcript.record(
                    record.model_copy(update={"phase": "done", "before": before})
                )
            else:
                self.transcript.record(
                    RewindRecord(phase="done", to_seq=plan.target.seq, restore=plan.restore)
                )
        except asyncio.CancelledError:
            return "rewind_failed", None
        except (RewindError, CheckpointError, SessionWriteError) as exc:
            message = f"rewind failed: {exc}"
            if intent:
                # The intent is on disk: the next start finishes the rewind (restoring is
                # idempotent); until then the files may be partly restored.
                message += (
                    "; the files may be partly restored until the pod's next start, which "
                    "finishes the rewind"
                )
            self.emit("error", ErrorData(code="invalid_request", message=message))
            self.alert("error", "rewind", message)
            return "rewind_failed", None
        except Exception as exc:  # a bug must still bring the machine out of rewinding
            self._task_crashed("rewind", exc)
            return "rewind_failed", None
        if plan.conversation:
            self.transcript.rewind(plan.target.seq)
            self.context.reset()  # what was spent stays spent: session_usage is kept
        self.emit("rewound", rewind_data(plan, files))
        return "rewind_done", None

    def checkpoint_turn(self) -> None:
        """Start the snapshot of the workspace as a turn with a prompt begins (once per
        prompt). It runs while the first request streams: nothing changes the files before
        the turn's first tools, which wait for it (:meth:`before_tools`)."""
        seq, self._prompt_seq = self._prompt_seq, None
        if seq is not None and self.checkpoints is not None:
            self._turn_snapshot = asyncio.ensure_future(
                self.checkpoints.snapshot(seq=seq, turn=self.history.turn, reason="turn")
            )

    async def turn_snapshot_taken(self) -> None:
        """Wait for the turn's snapshot, if one is still being taken (its record on disk)."""
        pending, self._turn_snapshot = self._turn_snapshot, None
        if pending is not None:
            # Shielded: an interrupt of the turn must not leave a half-taken snapshot behind.
            await asyncio.shield(pending)

    async def before_tools(self, calls: list[ToolUseBlock]) -> None:
        """Snapshot the workspace before a round whose tools may change it (a round of reads
        lets the turn's snapshot go on meanwhile)."""
        if self.checkpoints is None:
            return
        registry = self.tools.registry
        changing = [call for call in calls if _changes_files(registry.get(call.name))]
        if not changing:
            return
        # No tool changed the files since the turn began while its snapshot is pending.
        unchanged_since_turn = self._turn_snapshot is not None
        await self.turn_snapshot_taken()
        touched = set(self.checkpoints.touched)
        for call in changing:
            path = call.input.get("path") if isinstance(call.input, dict) else None
            if isinstance(path, str):
                self.checkpoints.touched.add(path)
        if unchanged_since_turn and not (
            self.checkpoints.touched_only and self.checkpoints.touched != touched
        ):
            return  # the turn's snapshot is the state these tools start from
        seq = self.history.next_seq
        await self.checkpoints.snapshot(seq=seq, turn=self.history.turn, reason="round")

    def approve_call(self, call_id: str, scope: str = "once") -> None:
        """Let a waiting tool call run (``session``: and calls like it from now on)."""
        self.approvals.answer(
            call_id, Answer(allow=True, scope="session" if scope == "session" else "once")
        )

    def deny_call(self, call_id: str, message: str = "", asked: bool = True) -> None:
        """Refuse a waiting tool call; the model reads the message (``asked`` False: no
        person was asked, a client refused on nobody's behalf)."""
        self.approvals.answer(call_id, Answer(allow=False, message=message, asked=asked))

    def answer_input(
        self, input_id: str, action: str = "decline", content: dict[str, Any] | None = None
    ) -> None:
        """Answer a waiting request for input; its MCP server gets it."""
        answer: Action = (
            "accept" if action == "accept" else "cancel" if action == "cancel" else "decline"
        )
        self.elicitations.answer(input_id, answer, content)

    def input_waiting(self) -> bool:
        """Whether a request for input waits for a person (beside a waiting approval)."""
        return self.elicitations.waiting()

    def turn_open(self) -> bool:
        """Whether the last turn is still open (paused), so a compaction returns to paused."""
        return self._turn_is_open

    def compaction_requested(self) -> bool:
        """Whether a ``compact`` waits (asked mid-turn; the turn ended before a round boundary)."""
        return self._compaction_request is not None

    def end_turn(self, result: str) -> None:
        """Close the current turn for good: persist and announce ``turn_end``."""
        if self._preread:
            paths = ", ".join(f"@{ref.label}" for ref in self._preread)
            self.alert("warn", "file_ref", f"the turn ended before {paths} could be read")
            self._preread = []
        if self._unsubmitted is not None:
            self.alert(
                "warn",
                "prompt_submit",
                "the turn ended before its UserPromptSubmit hooks passed the prompt; it was "
                "not sent: " + _clip(self._unsubmitted.message().text),
            )
            self._unsubmitted = None
            self.transcript.record(HeldPromptRecord(phase="done", turn=self.history.turn))
        self.transcript.end_turn(self.history.turn, result)
        self._turn_is_open = False
        self.emit("turn_end", TurnEndData(turn=self.history.turn, result=result))  # type: ignore[arg-type]
        if self.upward is not None and result in ("finished", "limit_reached"):
            self.upward("turn_ended", result)

    def end_run(self, result: str) -> None:
        """Tell clients how the run they started ended."""
        if (
            self.jobs is not None
            and result in ("paused", "cancelled")
            and self.state_id != "stopped"
        ):
            # Jobs belong to the pod, not the turn: say that they go on (before run_end, which
            # is where a client like `pod run` stops listening).
            alert = self.jobs.still_running(result)
            if alert is not None:
                self.alert("info", "jobs", alert)
        self.emit("run_end", RunEndData(result=result))  # type: ignore[arg-type]
        if result == "errored" and self.upward is not None:
            self.upward("errored", "the turn failed")

    def on_enter_stopped(self) -> None:
        """The pod stopped: keep undelivered notes, say goodbye, let the process end."""
        if self.notes or (self.jobs is not None and self.jobs.reports_pending):
            # Notes that never reached a turn are kept in the session, not dropped.
            self.inject_queued_notes()
        if self.upward is not None:
            self.upward("shut_down", "")
        self.emit("shutdown", {})
        if self.on_stopped is not None:
            self.on_stopped()

    # -- the turn task ------------------------------------------------------------------------

    def _launch(self, *, cancelled: str | None = None, failure: str | None = None) -> None:
        turn = Turn(
            host=self,
            provider=self.provider,
            tools=self.tools,
            interceptors=self.interceptors,
            system_prompt=self.system_prompt,
            model=self.provider.model,
            max_tokens=self.config.max_tokens,
            max_rounds=self.config.max_rounds,
            validator=self._validator,
            cache_ttl=None if self.config.prompt_cache == "off" else self.config.prompt_cache,
            max_tokens_spent=self.config.max_turn_tokens,
            spent=lambda: self.turn_usage.context_tokens + self.turn_usage.output_tokens,
            subagent=self.config.subpods.depth > 0,
        )
        self.task.start(
            self._drive(turn, cancelled, failure),
            interrupted=("turn_interrupted", "cancelled"),
            name=f"turn-{self.history.turn}",
        )

    async def _drive_compaction(self, request: CompactionRequest) -> Outcome:
        """A compaction between turns: ``compaction_done``, or ``compaction_failed``."""
        try:
            await self.learn_window()
            if self.interceptors.has(HookEvent.PRE_COMPACT):
                await self.interceptors.pre_compact(request.trigger, request.focus)
            compaction = await self.compactor.compact(
                request,
                system=self.system_prompt,
                tools=self.tools.registry.specs(),
                model=self.provider.model,
                max_tokens=self.config.max_tokens,
                thinking=self.thinking_plan,
            )
        except asyncio.CancelledError:
            return "compaction_failed", None
        except CompactionNotSmaller as exc:  # nothing changed, as when nothing was to compact
            self.alert("info", "compaction", str(exc))
            return "compaction_done", None
        except (CompactionError, SessionWriteError) as exc:
            self.emit("error", ErrorData(code="provider_error", message=str(exc)))
            self.alert("error", "compaction", f"compaction failed: {exc}")
            return "compaction_failed", None
        except TurnError as exc:  # the model refuses the thinking settings (said already)
            self.emit("error", ErrorData(code=exc.code, message=str(exc)))  # type: ignore[arg-type]
            return "compaction_failed", None
        except Exception as exc:  # a bug must still bring the machine out of compacting
            self._task_crashed("compaction", exc)
            return "compaction_failed", None
        if compaction is None:
            self.alert("info", "compaction", "nothing to compact yet")
        elif self.interceptors.has(HookEvent.SESSION_START):
            try:
                for note in await self.interceptors.session_start("compact"):
                    self.queue_note(note)
            except asyncio.CancelledError:
                pass  # the compaction is committed; the hooks count as not run
        return "compaction_done", None

    def _task_crashed(self, source: str, exc: Exception) -> None:
        """A bug in a task between turns: logged, and said to clients as an internal error."""
        log.exception("%s task crashed", source)
        message = f"internal error: {type(exc).__name__}: {exc}"
        self.emit("error", ErrorData(code="internal", message=message))
        self.alert("error", source, message)

    async def _drive(self, turn: Turn, cancelled: str | None, failure: str | None) -> Outcome:
        """Run the turn; returns the machine event for how it ended and its result."""
        try:
            if failure is not None:
                raise TurnError(failure, code="internal")
            if cancelled is not None:
                return "turn_finished", "cancelled"
            await self._add_session_context()
            if not await self._submit_held_prompt():
                return "turn_finished", "cancelled"
            self.checkpoint_turn()
            if self._preread:
                await self.learn_window()
                if self.thinking_plan.on:
                    self._attach_prereads()
                else:
                    await self._read_mentions()
            result = await turn.run()
            # Recorded before the turn ends, so a rewind right after it finds it.
            await self.turn_snapshot_taken()
        except asyncio.CancelledError:
            return "turn_interrupted", "cancelled"
        except TurnError as exc:
            self.emit("error", ErrorData(code=exc.code, message=str(exc)))  # type: ignore[arg-type]
            self.alert("error", "turn", str(exc))
            return "turn_failed", "errored"
        except SessionWriteError as exc:
            # The transcript has alerted already; what it could not write waits in memory.
            self.emit("error", ErrorData(code="session_write", message=str(exc)))
            return "turn_failed", "errored"
        except Exception as exc:  # a bug in the loop must still end the turn cleanly
            log.exception("turn task crashed")
            message = f"internal error: {type(exc).__name__}: {exc}"
            self.emit("error", ErrorData(code="internal", message=message))
            self.alert("error", "turn", message)
            return "turn_failed", "errored"
        if result == "paused":
            return "turn_paused", None
        return "turn_finished", result

    def _report(self, event: str, result: str | None) -> None:
        """Tell the machine how the task ended; it decides what that means."""
        if result is None:
            self.machine.send(event)
        else:
            self.machine.send(event, result=result)

    def _attach_prereads(self) -> None:
        """The refs a synthetic read would have read, attached as ``[File: …]`` messages.

        A synthetic read is a tool loop the model did not start: its assistant message has no
        thinking to begin with, and with thinking on the API refuses to continue such a loop.
        """
        resolution = resolve_segments(
            self.fs,
            list(self._preread),
            max_bytes=self.config.file_ref_max_bytes,
            max_refs=self.config.max_preread_files,
        )
        for failure in resolution.failures:
            self.alert("warn", "file_ref", failure.alert_message)
        self._preread = []
        for item in resolution.items:
            self.commit(item)

    async def _read_mentions(self) -> None:
        """The synthetic-read style: a Read tool call and its results, committed together.

        The list stays on the open turn until the reads are committed, so a pause in the middle
        of them is resumed with the reads still to do.
        """
        results = await preread_files(
            self.fs,
            self._preread,
            # A synthetic read must look exactly like a real one, cap included.
            max_bytes=self.config.content_cap("read_file"),
            max_files=self.config.max_preread_files,
        )
        items, failures = synthetic_read_items(results, turn=self.history.turn)
        for failure in failures:
            self.alert("warn", "file_ref", failure.alert_message)
        self._preread = []
        for item in items:
            self.commit(item)

    async def wait_idle(self) -> None:
        """Wait for the current task, if any, to finish (tests and shutdown)."""
        await self.task.wait_idle()
