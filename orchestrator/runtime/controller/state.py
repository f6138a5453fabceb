"""The controller's fields: one documented dataclass the feature modules take.

What the pod was built with (its config, provider, tools, transcript…) and what it holds in
memory between the machine's actions (usage, queued notes, the open turn's start, the task
asked for next) live in :class:`ControllerState`. The feature modules of this package are
functions over it; :class:`~orchestrator.runtime.controller.actions.Controller` inherits it,
so the pod's other parts read the same fields as before (``controller.config``,
``controller.transcript``…).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from orchestrator.adapters.mcp.elicitations import Elicitations
from orchestrator.adapters.providers.base import Provider
from orchestrator.adapters.scoped_fs import ScopedFS
from orchestrator.adapters.session import CheckpointRecord, RewindRestore
from orchestrator.capabilities.hooks.chain import InterceptorChain
from orchestrator.capabilities.permissions.approvals import Approvals
from orchestrator.capabilities.permissions.modes import ModeSwitch
from orchestrator.config.model import PodConfig
from orchestrator.core.budget import BudgetCaps, BudgetStop
from orchestrator.core.history import History, SystemMessage
from orchestrator.core.model_change import ModelChange
from orchestrator.core.notes import NoteQueue
from orchestrator.core.segments import FileRefSegment
from orchestrator.core.thinking import ThinkingPlan
from orchestrator.core.usage import TokenUsage
from orchestrator.core.validator import IncrementalValidator
from orchestrator.core.web import WebPlan
from orchestrator.protocol import ErrorData, TurnPhase
from orchestrator.runtime.compaction import CompactionRequest, Compactor
from orchestrator.runtime.context import Context
from orchestrator.runtime.custom_commands import CommandCatalog
from orchestrator.runtime.state_clock import StateClock
from orchestrator.runtime.submit import Submission
from orchestrator.runtime.tool_runner import ToolRunner
from orchestrator.runtime.transcript import Transcript

if TYPE_CHECKING:
    from orchestrator.capabilities.jobs import Jobs
    from orchestrator.capabilities.subpods.children import Children
    from orchestrator.runtime.checkpointing import Checkpointer
    from orchestrator.runtime.fallback import Fallback
    from orchestrator.runtime.pod_task import PodTask
    from orchestrator.runtime.status import StatusBoard
    from orchestrator.runtime.todos import TodoBoard
    from states import PodLifecycle

log = logging.getLogger(__name__)


@dataclass(kw_only=True)
class TurnOpening:
    """What the open turn still has to do before its first request (kept across a pause,
    and across an unload of a paused pod); a new, empty one when the turn closes."""

    prompt: Submission | None = None
    """The prompt while its ``UserPromptSubmit`` hooks have not passed it (Resume asks them
    again; the turn's end drops it, saying so)."""
    preread: list[FileRefSegment] = field(default_factory=list)
    """``@`` refs the turn still has to pre-read."""


@dataclass(kw_only=True, eq=False, repr=False)
class ControllerState:
    """Everything one pod's controller holds: what it was built with, then what changes.

    ``eq=False``: a pod is itself, never equal to another by its fields (and stays hashable);
    ``repr=False``: its fields hold the whole conversation, too much for a log line.
    """

    # -- what the pod was built with -------------------------------------------------------
    config: PodConfig
    """The pod's config, as loaded."""
    provider: Provider
    """The model's API (anthropic, or a scripted one in tests)."""
    tools: ToolRunner
    """Runs tool calls; its ``registry`` is the tools offered."""
    fs: ScopedFS
    """The workspace, as the pod may read and write it."""
    transcript: Transcript
    """Commits history to the session file and announces it to clients."""
    system_prompt: str
    """The system prompt every request sends."""
    context: Context
    """The model's view of the history and how full its window is."""
    approvals: Approvals
    """Tool calls waiting for a person's approval."""
    interceptors: InterceptorChain
    """The pod's interceptors and hook commands."""
    on_stopped: Callable[[], None] | None = None
    """Called once the pod has stopped (the process may end)."""
    upward: Callable[[str, str], None] | None = None
    """Tells a parent pod how this child's turns end (None: not a child pod)."""
    checkpoints: Checkpointer | None = None
    """Snapshots of the workspace (None: off by config)."""
    jobs: Jobs | None = None
    """The pod's background jobs (None: a pod built without them, in tests)."""
    subpods: Children | None = None
    """The child pods of ``task`` calls (None: the pod offers no ``task``)."""
    todos: TodoBoard | None = None
    """The model's todo list (``todo_write``; None: a pod built without it, in tests)."""
    fallback: Fallback | None = None
    """The fallback model (``fallback_model``; None: none configured)."""
    commands: CommandCatalog = field(default_factory=CommandCatalog)
    """The custom slash commands a ``run`` may invoke (files, MCP prompts)."""

    # -- made from the above by the controller ---------------------------------------------
    history: History = field(init=False)
    """The transcript's history (the same object)."""
    elicitations: Elicitations = field(init=False)
    """Requests for input of MCP servers, waiting for a person (``[mcp] elicitation``)."""
    compactor: Compactor = field(init=False)
    """Makes and commits compactions."""
    task: PodTask = field(init=False)
    """The pod's one task at a time: a turn, a compaction or a rewind."""
    board: StatusBoard = field(init=False)
    """What ``status`` says, and when it is said."""
    machine: PodLifecycle = field(init=False)
    """The lifecycle machine; the controller is its model."""
    modes: ModeSwitch | None = field(init=False, default=None)
    """The permission mode now, switched by ``set_mode`` and approved plans (None: a pod
    whose runner has no policy, in tests)."""

    # -- what changes ------------------------------------------------------------------------
    notes: NoteQueue = field(default_factory=NoteQueue)
    """Notes (``notify``, ``pod_event``) waiting for the next round boundary."""
    session_usage: TokenUsage = field(default_factory=TokenUsage)
    """Tokens the session spent, all turns."""
    model_usage: dict[str, TokenUsage] = field(default_factory=dict)
    """The part of ``session_usage`` other models answered (a fallback), by model: priced at
    their own prices."""
    turn_usage: TokenUsage = field(default_factory=TokenUsage)
    """Tokens the open (or last) turn spent; its budget counts these."""
    session_spent_usd: float = 0.0
    """Dollars the session spent, each request priced when counted (docs/budgets.md)."""
    turn_spent_usd: float = 0.0
    """Dollars the open (or last) turn spent; ``turn_budget_usd`` caps it."""
    caps: BudgetCaps | None = None
    """The budgets ``set_budget`` set (None: the config's)."""
    budget_stop: BudgetStop | None = None
    """The cap that paused the open turn, until it resumes or ends (``pause_reason``)."""
    turn_is_open: bool = False
    """Whether the last turn is still open (running or paused)."""
    submission: Submission | None = None
    """A ``run``'s prompt, its refs resolved, until the turn it starts begins."""
    phase: TurnPhase | None = None
    """Where the turn's start stands while it is in one of its phases; None outside them."""
    opening: TurnOpening = field(default_factory=TurnOpening)
    """What the open turn still has to do before its first request."""
    prompt_seq: int | None = None
    """The seq of the open turn's user message, until its checkpoint is taken."""
    turn_snapshot: asyncio.Future[CheckpointRecord | None] | None = None
    """The turn's snapshot while it is being taken."""
    session_start: asyncio.Future[list[SystemMessage]] | None = None
    """What the ``SessionStart`` hooks will add, while they run."""
    session_context: list[SystemMessage] = field(default_factory=list)
    """What ``SessionStart`` hooks of an unloaded pod added, for its next turn."""
    job_notes: list[SystemMessage] = field(default_factory=list)
    """What an unloaded pod had to tell of background jobs that ended, for its next turn."""
    compaction_request: CompactionRequest | None = None
    """A ``compact`` asked for and not started yet."""
    rewind_request: tuple[int | None, RewindRestore] | None = None
    """Where the asked-for rewind goes and what it restores, until it starts."""
    validator: IncrementalValidator = field(default_factory=IncrementalValidator)
    """Checks each request's messages before they are sent (kept across turns: incremental)."""
    thinking: ThinkingPlan | None = None
    """Decided from the model's capabilities at the first turn (see ``learn_window``)."""
    thinking_refused: str | None = None
    """Why the model refuses the configured thinking, once asked (every turn then fails)."""
    web: WebPlan | None = None
    """The web tools the turn requests declare, decided with the thinking plan."""
    pending_model: ModelChange | None = None
    turn_model: str | None = None
    """The model the open turn runs on when a custom command chose it (None: the pod's);
    the budget prices the turn's next request at it (:mod:`orchestrator.runtime.command_model`)."""
    """A ``set_model`` change waiting for the next turn (:mod:`orchestrator.runtime.model_choice`)."""
    state_clock: StateClock = field(default_factory=StateClock)
    """Seconds in each lifecycle state since the pod started (``get_stats``)."""

    def emit(self, event: str, data: BaseModel | dict[str, Any]) -> None:
        """Broadcast one event to every client."""
        self.transcript.emit(event, data)

    def alert(self, level: str, source: str, message: str) -> None:
        """Broadcast an alert a person should see."""
        self.transcript.alert(level, source, message)


@contextmanager
def in_phase(state: ControllerState, phase: TurnPhase) -> Iterator[None]:
    """The turn is in ``phase`` for the block; out of any phase after it, however it ends."""
    state.phase = phase
    try:
        yield
    finally:
        state.phase = None


def task_crashed(state: ControllerState, source: str, exc: Exception) -> None:
    """A bug in a task between turns: logged, and said to clients as an internal error."""
    log.exception("%s task crashed", source)
    message = f"internal error: {type(exc).__name__}: {exc}"
    state.emit("error", ErrorData(code="internal", message=message))
    state.alert("error", source, message)


__all__ = ["ControllerState", "TurnOpening", "in_phase", "task_crashed"]
