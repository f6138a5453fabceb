"""The tool contract: a name, a JSON schema, and an async ``run`` that returns a ToolOutput.

Tool failures the model should read are returned as ``ToolOutput(is_error=True)`` or raised
as :class:`ToolError` (the runner turns it into such a result); anything else is a bug.
Cancellation (pause, cancel, shutdown) arrives as ``asyncio.CancelledError``: a tool that owns
a process kills it and re-raises; output produced so far goes to ``ctx.partial``.

The built-in tools derive from :class:`orchestrator.capabilities.tools.arguments.TypedTool`: their arguments
are a pydantic model, which gives both ``input_schema`` and the validation ``run`` does first.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from orchestrator.capabilities.permissions import Policy, ToolKind
from orchestrator.core.tool_output import ToolOutput
from orchestrator.errors import PodRuntimeError

if TYPE_CHECKING:
    from orchestrator.adapters.scoped_fs import ScopedFS
    from orchestrator.capabilities.tools.client_files import ClientFiles, ClientTerminal

# ToolOutput lives in orchestrator.core.tool_output (the pure shaping of results works on it);
# it is re-exported here because it is part of the contract every tool implements.
__all__ = [
    "AcpKind",
    "ClosableTool",
    "PartialOutput",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolOutput",
    "resumable",
    "tool_kind",
]

AcpKind = Literal["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "other"]
"""How an editor speaking ACP (the Agent Client Protocol) draws a call of a tool: its
``ToolKind``. Not the permission kind: ``glob`` and ``grep`` are reads for permissions but
``search`` for an editor."""


class ToolError(PodRuntimeError):
    """A failure the model should read as an ``is_error`` tool result."""


class PartialOutput(list[str]):
    """Output a running tool produced so far.

    Each piece is also copied to a spool file when the call has one (read back after a crash)
    and passed to ``on_text`` when someone watches live (clients draw it as it comes).
    """

    def __init__(
        self, spool_fd: int | None = None, on_text: Callable[[str], None] | None = None
    ) -> None:
        super().__init__()
        self.spool_fd = spool_fd
        self.on_text = on_text

    def append(self, text: str) -> None:
        """Keep one piece of output (and copy it to the spool, best effort)."""
        super().append(text)
        if self.spool_fd is not None:
            try:
                os.write(self.spool_fd, text.encode("utf-8", "replace"))
            except OSError:
                self.spool_fd = None  # a full disk must not stop the tool; the copy is a bonus
        if self.on_text is not None:
            self.on_text(text)


@dataclass(slots=True, kw_only=True)
class ToolContext:
    """What a running tool may use."""

    fs: ScopedFS
    """Every file access goes through here (scope, symlinks, FIFOs)."""
    workspace: Path
    """The pod's workspace root (the working directory of processes)."""
    scratch_dir: Path
    """Where tools write large outputs for later reading (inside the workspace)."""
    partial: PartialOutput = field(default_factory=PartialOutput)
    """Output produced so far; kept in the result if the tool is interrupted."""
    call_id: str = ""
    """The tool call's id (a ``task`` call links its child pod to it; a background job's
    records name the call that started it)."""
    policy: Policy | None = None
    """The pod's permission policy, "always" answers included: ``web_fetch`` judges each
    redirect by it. None: no policy (a tool run outside a pod)."""
    client_files: ClientFiles | None = None
    """The editor's files, when a client of the pod serves them (:mod:`.client_files`):
    the file tools read and write through it, under the same scope. None: the disk only."""
    client_terminal: ClientTerminal | None = None
    """The editor's terminal, when a client of the pod serves one: ``bash`` runs there when
    the pod's sandbox is off. None: the pod runs commands itself."""


def resumable(tool: object) -> bool:
    """Whether a call of ``tool`` is resumed after a pause or a crash instead of being closed
    (it keeps its own write-ahead record: ``task``'s child pod)."""
    return bool(getattr(tool, "resumable", False))


def tool_kind(tool: object) -> ToolKind:
    """What a tool does, for permissions: its ``kind``, else read-only or not."""
    kind = getattr(tool, "kind", None)
    if kind in ("read", "edit", "execute", "other"):
        return kind  # type: ignore[no-any-return]
    return "execute" if getattr(tool, "side_effects", True) else "read"


@runtime_checkable
class ClosableTool(Protocol):
    """A tool that holds something until the pod stops (``bash``'s background jobs)."""

    async def aclose(self) -> None:
        """Let go of it: the pod stops."""
        ...


class Tool(Protocol):
    """One tool the model can call."""

    name: str
    description: str
    input_schema: dict[str, Any]
    side_effects: bool
    """True when running the call twice could do harm (a command, a write). Such a call gets a
    synced ``tool_start`` record in the session before it starts, so after a crash it is
    reported as interrupted instead of being run again. Read-only tools simply re-run."""

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput | str:
        """Do the work; a plain string is summarised by the output chokepoint."""
        ...
