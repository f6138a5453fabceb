"""An ACP session's parts: the pod it runs on and how that pod is started, the prompt in
flight, and the small helpers that shape what the editor is sent."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from cli.acp.options import Settings
from cli.cited_stream import CitedStream
from cli.errors import CliError
from orchestrator.adapters.scoped_fs import FsError, ScopedFS
from orchestrator.serving.client import PodClient

T = TypeVar("T")


class PodLaunchError(CliError):
    """A pod could not be started for a session; the message says why (and where the log is)."""


@dataclass(frozen=True)
class LaunchedPod:
    """A pod started for one session: its socket, and how to wait for (or force) its end."""

    socket: Path
    stop: Callable[[], Awaitable[None]]
    """Called after ``shutdown`` was sent: waits for the pod to exit, kills it if it hangs."""


PodLauncher = Callable[[Path, Path | None, dict[str, Any]], Awaitable[LaunchedPod]]
"""Starts a pod for a workspace, on a session file or (None) a new session, with the MCP
servers the editor passed (``[mcp.servers]`` entries by name)."""


@dataclass(frozen=True)
class AcpOptions:
    """How ``pod acp`` gets a pod per session: a launcher, or one pod to attach to."""

    launch: PodLauncher | None = None
    attach: Path | None = None
    """Talk to the pod on this socket instead of starting pods."""


@dataclass
class InputAsked:
    """A pod's request for input (``elicitation_request``) while ``pod acp`` deals with it:
    put to the editor, then answered to the pod, until the pod says it is over."""

    mode: str
    """``form`` or ``url``."""
    task: asyncio.Task[None] | None = None
    """Asks the editor and answers the pod; cancelled when the request ends first."""
    answered: asyncio.Future[str] | None = None
    """Set when an answer went to the pod: "" once the request is over, else the pod's
    refusal (``code: message``) of that answer."""
    shown: bool = False
    """Sent to the editor (``elicitation/create``), so it may be showing it."""
    over: bool = False
    """The pod said the request is over (``elicitation_resolved``): send nothing more."""


@dataclass
class AcpSession:
    """One ACP session: its pod, the connection to it, and the prompt in flight."""

    id: str
    workspace: Path
    client: PodClient
    pod: LaunchedPod | None = None
    """The pod started for this session (None when attached to one that runs)."""
    prompt: asyncio.Future[tuple[str, str]] | None = None
    """Resolves to (``run_end`` result, error message) when the running prompt ends."""
    pump: asyncio.Task[None] | None = None
    calls: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)
    before: dict[str, str | None] = field(default_factory=dict)
    """An edit's file as it was before the call, for the diff shown with its result."""
    output: dict[str, str] = field(default_factory=dict)
    asking: set[asyncio.Task[None]] = field(default_factory=set)
    """Permission requests waiting for the editor."""
    terminals: dict[str, str] = field(default_factory=dict)
    """Commands of the pod running in the editor's terminals: request id to terminal id."""
    inputs: dict[str, InputAsked] = field(default_factory=dict)
    """Requests for input of the pod, by their id, until the pod says they are over."""
    cited: CitedStream = field(default_factory=CitedStream)
    """The answer's citations, message by message (see :mod:`cli.cited_stream`)."""
    mode: str = "default"
    """The pod's permission mode as the editor was last told it."""
    settings: Settings | None = None
    """The model, thinking and effort as the editor was last told them (None: not told)."""
    models: list[tuple[str, str]] = field(default_factory=list)
    """The models the pod's provider lists, (id, name), for the ``model`` option."""
    failure: str = ""
    """Why the running turn failed (its ``error`` event), for the prompt's JSON-RPC error."""
    cancelling: asyncio.Future[str] | None = None
    rewinding: asyncio.Future[str] | None = None
    """``/rewind`` waiting for its outcome, in words."""
    """``/cancel`` waiting for its outcome: "" when a turn ended, else the pod's refusal."""


def resolve(future: asyncio.Future[T] | None, value: T) -> None:
    """Give a waiting future its value, unless it has one or nobody waits."""
    if future is not None and not future.done():
        future.set_result(value)


def settle(session: AcpSession, result: str, message: str) -> None:
    """The running prompt (if any) ends with ``result``; ``message`` says why."""
    resolve(session.prompt, (result, message))


def current_text(workspace: Path, path: object) -> str | None:
    """A file's text now, through the workspace's scope, for an edit's diff; None if unreadable."""
    if not isinstance(path, str):
        return None
    try:
        return ScopedFS(workspace).read_text(path, max_bytes=1024 * 1024).text
    except FsError:
        return None
