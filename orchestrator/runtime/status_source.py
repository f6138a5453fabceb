"""What a pod's status reads of it: :class:`StatusSource`, a narrow view of the controller.

:class:`orchestrator.runtime.status.StatusBoard` takes one, so the status module never imports
the controller (which builds the board): the controller satisfies it structurally.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel

from orchestrator.config.hooks import HookCommand
from orchestrator.config.model import PodConfig
from orchestrator.core.usage import TokenUsage
from orchestrator.core.web import WebPlan
from orchestrator.protocol import (
    ApprovalRequestData,
    BudgetData,
    ElicitationRequestData,
    JobData,
    TodoData,
    TurnPhase,
)
from orchestrator.runtime.context import ContextSize

__all__ = ["StatusSource"]


class _Provider(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def model(self) -> str: ...


class _Registry(Protocol):
    def get(self, name: str) -> object | None: ...
    def names(self) -> list[str]: ...


class _Policy(Protocol):
    @property
    def mode(self) -> str: ...


class _Tools(Protocol):
    @property
    def registry(self) -> _Registry: ...
    @property
    def policy(self) -> _Policy | None: ...


class _Session(Protocol):
    @property
    def path(self) -> Path: ...


class _Transcript(Protocol):
    @property
    def session(self) -> _Session: ...


class _History(Protocol):
    @property
    def turn(self) -> int: ...


class _Context(Protocol):
    def size(self) -> ContextSize: ...


class _Thinking(Protocol):
    @property
    def summary(self) -> str: ...


class _Approvals(Protocol):
    def pending(self) -> list[ApprovalRequestData]: ...


class _Elicitations(Protocol):
    def pending(self) -> list[ElicitationRequestData]: ...


class _Jobs(Protocol):
    def data(self) -> list[JobData]: ...


class _Todos(Protocol):
    def data(self) -> list[TodoData]: ...


class _HookRunner(Protocol):
    def sandboxed(self, hook: HookCommand) -> bool: ...


class _HookCommands(Protocol):
    @property
    def runner(self) -> _HookRunner: ...


class _Interceptors(Protocol):
    @property
    def commands(self) -> _HookCommands | None: ...


class _Machine(Protocol):
    @property
    def configuration_values(self) -> Iterable[Any]: ...


class StatusSource(Protocol):
    """What :class:`StatusBoard` reads of a pod, and the one thing it does (``emit``)."""

    @property
    def phase(self) -> TurnPhase | None:
        """The turn's start phase (``status.phase``), None outside the start phases."""
        ...

    @property
    def config(self) -> PodConfig:
        """The pod's configuration (its name, workspace, prices, sandbox, hooks)."""
        ...

    @property
    def provider(self) -> _Provider:
        """The model provider: its name and model."""
        ...

    @property
    def machine(self) -> _Machine:
        """The lifecycle machine, for the active states."""
        ...

    @property
    def tools(self) -> _Tools:
        """The tool runner, for the registry of offered tools."""
        ...

    @property
    def transcript(self) -> _Transcript:
        """The session's writer, for the session file's path."""
        ...

    @property
    def history(self) -> _History:
        """The conversation, for its turn number."""
        ...

    @property
    def context(self) -> _Context:
        """How full the context window is."""
        ...

    @property
    def session_usage(self) -> TokenUsage:
        """Tokens spent in the session."""
        ...

    @property
    def model_usage(self) -> Mapping[str, TokenUsage]:
        """The part of ``session_usage`` other models answered (a fallback), by model."""
        ...

    @property
    def turn_usage(self) -> TokenUsage:
        """Tokens spent in the current turn."""
        ...

    @property
    def thinking(self) -> _Thinking | None:
        """How the pod asks the model to think (None: not asked yet)."""
        ...

    @property
    def web(self) -> WebPlan | None:
        """The web tools the requests declare (None: not decided yet)."""
        ...

    @property
    def thinking_refused(self) -> str | None:
        """Why the thinking settings were refused, if they were."""
        ...

    @property
    def approvals(self) -> _Approvals:
        """Calls waiting for a person's approval."""
        ...

    @property
    def elicitations(self) -> _Elicitations:
        """Requests for input waiting for a person."""
        ...

    @property
    def jobs(self) -> _Jobs | None:
        """The pod's background jobs (None: it runs none)."""
        ...

    @property
    def todos(self) -> _Todos | None:
        """The model's todo list (None: a pod built without it)."""
        ...

    @property
    def interceptors(self) -> _Interceptors:
        """The interceptor chain, for where hook commands run."""
        ...

    def budget_data(self) -> BudgetData:
        """The budgets and the spend against them."""
        ...

    def cost_usd(self) -> float | None:
        """What the session's requests cost; None when the model has no price."""
        ...

    def pause_reason(self, paused: bool) -> Literal["user", "budget"] | None:
        """Why the pod is paused (None when ``paused`` is False)."""
        ...

    def emit(self, event: str, data: BaseModel | dict[str, Any]) -> None:
        """Broadcast one event to every client."""
        ...
