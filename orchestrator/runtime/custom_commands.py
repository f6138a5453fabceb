"""Custom slash commands: the pod's catalog of them, and a submit that invokes one turned
into its expansion (as data; the controller runs what must run when the turn starts).

A command comes from a markdown file (the shared library loader finds them) or from an MCP
server's prompt. A ``run`` invokes one with a ``workflow_invoke`` segment, or with text that
starts with ``/<name>`` naming a known command. The user message keeps the invocation as its
segments (the line as typed, which a rewind offers back) and reads, for the model, as the
expansion: the body with its arguments put in (:mod:`orchestrator.core.command_text`), its
``@path`` refs resolved like a person's, and the output of its ``!`command` `` lines, which
run as ``bash`` calls under the rules and the sandbox when the turn starts.

Until those have run, the expansion holds a random marker in each one's place (arguments
cannot guess it) and the prompt is held on disk, with each line's progress, so a pod that
dies in between never runs a line twice (see ``controller/command_lines.py``).
"""

from __future__ import annotations

import secrets
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from orchestrator.core.command_text import (
    ArgumentText,
    BodyText,
    Invocation,
    ShellLine,
    clean_line,
    expand_body,
    parse_invocation,
    prompt_arguments,
    valid_command_name,
)
from orchestrator.core.mentions import expand_mentions
from orchestrator.core.segments import (
    PasteSegment,
    Segment,
    TextSegment,
    WorkflowInvokeSegment,
    flatten_segments,
)
from orchestrator.protocol import CommandData, CommandsData
from orchestrator.protocol.commands import CommandSource

__all__ = [
    "CommandCatalog",
    "CommandSpec",
    "Expansion",
    "McpPromptSpec",
    "PendingStep",
    "expand_invocation",
    "fill_markers",
    "find_invocation",
]

MAX_BODY_CHARS = 200_000
"""A command body longer than this is cut (with a note): a prompt, not a data file."""


@dataclass(frozen=True, slots=True)
class McpPromptSpec:
    """An MCP server's prompt offered as ``/mcp__<server>__<prompt>``."""

    server: str
    prompt: str
    arguments: tuple[str, ...] = ()
    """Its arguments' names, in the server's order (position maps onto them)."""
    required: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class CommandSpec:
    """One command: where it comes from, what menus say of it, and what it expands to."""

    name: str
    source: CommandSource
    description: str = ""
    argument_hint: str = ""
    body: str = ""
    path: str | None = None
    model: str | None = None
    """The file's ``model``: a model for the turn it starts."""
    allowed_tools: tuple[str, ...] = ()
    """The file's ``allowed-tools``; granted only when ``trusted``."""
    trusted: bool = False
    """From the user's own directories (a workspace's file grants nothing)."""
    prompt: McpPromptSpec | None = None

    def data(self, shadowed_by: CommandSource | None = None) -> CommandData:
        """The command as ``list_commands`` lists it (one clean line each)."""
        return CommandData(
            name=self.name,
            description=clean_line(self.description),
            argument_hint=clean_line(self.argument_hint, limit=80),
            source=self.source,
            path=self.path,
            model=_model_shown(self.model),
            shadowed_by=shadowed_by,
        )


def _model_shown(model: str | None) -> str | None:
    """A file's ``model`` as menus show it (``inherit`` is the pod's: none)."""
    shown = clean_line(model or "", limit=80)
    return None if not shown or shown.lower() == "inherit" else shown


@dataclass
class CommandCatalog:
    """The pod's commands by name: files first (in the loader's order, first name wins), then
    MCP prompts under their own ``mcp__`` names."""

    files: list[CommandSpec] = field(default_factory=list)
    shadowed: list[tuple[CommandSpec, CommandSource]] = field(default_factory=list)
    """Files another of the same name hides, with the source of the one that wins."""
    prompts: dict[str, list[CommandSpec]] = field(default_factory=dict)
    """Each MCP server's prompts, by server name (replaced whole when its list changes)."""
    said: set[str] = field(default_factory=set)
    """Refusals alerted already (a file read again is not alerted again)."""

    def find(self, name: str) -> CommandSpec | None:
        """The command that runs for ``/name``; None when there is none."""
        for spec in self._running():
            if spec.name == name:
                return spec
        return None

    def take_files(self, other: CommandCatalog) -> None:
        """The files of a fresh read of the folders (MCP prompts stay as they are)."""
        self.files, self.shadowed = other.files, other.shadowed

    def set_prompts(self, server: str, prompts: Iterable[CommandSpec]) -> None:
        """A server's prompt list, now (empty: it has none, or stopped)."""
        self.prompts[server] = [spec for spec in prompts if valid_command_name(spec.name)]

    def listing(self, request_id: int | str | None = None) -> CommandsData:
        """Every command: those that run, then the shadowed ones."""
        running = [spec.data() for spec in self._running()]
        hidden = [spec.data(shadowed_by=winner) for spec, winner in self.shadowed]
        return CommandsData(commands=[*running, *hidden], id=request_id)

    def _running(self) -> list[CommandSpec]:
        return [*self.files, *(spec for specs in self.prompts.values() for spec in specs)]


@dataclass
class PendingStep:
    """Something the expansion waits for: a ``!`` line's ``bash`` run, or an MCP prompt's
    text. ``state`` goes ``pending`` → ``started`` (on disk before it runs) → ``done``."""

    kind: Literal["bash", "mcp"]
    marker: str
    """Stands in the held text for the output until it is in."""
    command: str = ""
    """The bash command line (``bash``)."""
    call_id: str = ""
    arguments: dict[str, str] = field(default_factory=dict)
    """The prompt's arguments (``mcp``)."""
    server: str = ""
    """The prompt's MCP server (``mcp``)."""
    state: Literal["pending", "started", "done"] = "pending"
    output: str = ""

    def to_json(self) -> dict[str, Any]:
        """As the held prompt's record keeps it."""
        return {
            "kind": self.kind,
            "marker": self.marker,
            "command": self.command,
            "call_id": self.call_id,
            "arguments": dict(self.arguments),
            "server": self.server,
            "state": self.state,
            "output": self.output,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PendingStep:
        """Read back from a held prompt's record."""
        return cls(
            kind=data["kind"],
            marker=data["marker"],
            command=data.get("command", ""),
            call_id=data.get("call_id", ""),
            arguments=dict(data.get("arguments", {})),
            server=data.get("server", ""),
            state=data.get("state", "pending"),
            output=data.get("output", ""),
        )


@dataclass(frozen=True, slots=True)
class Expansion:
    """A submit that invokes a command, ready to be resolved like any submit: ``body`` are
    the segments the model's text is made of (refs in the command's own words, arguments as
    data, a marker per pending step), ``user_refs`` the refs the person typed beside it."""

    spec: CommandSpec
    invocation: WorkflowInvokeSegment
    body: list[Segment]
    user_refs: list[Segment]
    steps: list[PendingStep]


def find_invocation(
    segments: Sequence[Segment], catalog: CommandCatalog
) -> tuple[CommandSpec | None, Invocation, list[Segment]] | None:
    """The command a submit invokes, the invocation, and the segments after it (the
    person's own refs); None when it invokes none. A ``workflow_invoke`` segment is always an
    invocation (its spec None when unknown); text starting with ``/<name>`` only when the
    name is a known command (else it is sent as typed)."""
    if not segments:
        return None
    first, rest = segments[0], list(segments[1:])
    if isinstance(first, WorkflowInvokeSegment):
        arguments = " ".join(p for p in (first.arguments, flatten_segments(rest).strip()) if p)
        return catalog.find(first.slug), Invocation(first.slug, arguments), _refs(rest)
    if not isinstance(first, TextSegment):
        return None
    parsed = parse_invocation(first.text)
    if parsed is None:
        return None
    spec = catalog.find(parsed.name)
    if spec is None:
        return None
    # The whole line as typed, the refs beside it read as their labels (``@x.py``).
    whole = parse_invocation(first.text + flatten_segments(rest))
    return spec, whole or parsed, _refs(rest)


def _refs(segments: list[Segment]) -> list[Segment]:
    return [seg for seg in segments if not isinstance(seg, TextSegment | PasteSegment)]


def expand_invocation(
    spec: CommandSpec,
    invocation: Invocation,
    user_refs: list[Segment],
    *,
    exists: Any,
    bash_available: bool,
) -> Expansion:
    """The expansion of a file command (an MCP prompt's is one pending step). ``exists``
    tells the body's ``@`` refs from prose, as for typed text."""
    segment = WorkflowInvokeSegment(slug=invocation.name, arguments=invocation.arguments)
    steps: list[PendingStep] = []
    body: list[Segment] = []
    if spec.prompt is not None:
        values, extra = prompt_arguments(invocation.arguments, list(spec.prompt.arguments))
        step = PendingStep(
            kind="mcp",
            marker=_marker(),
            command=spec.prompt.prompt,
            arguments=values,
            server=spec.prompt.server,
        )
        body = [PasteSegment(id="mcp", text=step.marker)]
        if extra:
            unused = " ".join(extra)
            body.append(
                PasteSegment(id="arguments", text=f"\n\n[not given to any argument: {unused}]")
            )
        return Expansion(spec, segment, body, user_refs, [step])
    text = spec.body
    if len(text) > MAX_BODY_CHARS:
        text = text[:MAX_BODY_CHARS] + f"\n[command body cut at {MAX_BODY_CHARS} characters]"
    for piece in expand_body(text, invocation.arguments):
        if isinstance(piece, BodyText):
            body += expand_mentions([TextSegment(text=piece.text)], exists=exists)
        elif isinstance(piece, ArgumentText):
            # A paste is never searched for refs: arguments are data.
            body.append(PasteSegment(id="arguments", text=piece.text))
        elif isinstance(piece, ShellLine):
            if not bash_available:
                note = f"[command not run: {piece.command} — bash is not enabled in this pod]"
                body.append(PasteSegment(id="shell", text=note))
                continue
            step = PendingStep(
                kind="bash",
                marker=_marker(),
                command=piece.command,
                call_id=f"toolu_cmdline_{secrets.token_hex(8)}",
            )
            steps.append(step)
            body.append(PasteSegment(id="shell", text=step.marker))
    return Expansion(spec, segment, body, user_refs, steps)


def _marker() -> str:
    return f"\x00pending-{secrets.token_hex(12)}\x00"


def never_started(steps: list[dict[str, Any]], started: Collection[str]) -> list[dict[str, Any]]:
    """Held steps as a restart finds them: a ``bash`` step marked ``started`` whose call has
    no write-ahead record (``tool_start``) never ran (the pod died while it waited for an
    approval, or before the runner got to it), so it is ``pending`` again; one with the
    record may have run, and stays ``started`` (never run again). An MCP prompt is only
    read (``prompts/get``): one that was being fetched is fetched again."""
    out: list[dict[str, Any]] = []
    for step in steps:
        unstarted = step.get("kind") == "bash" and step.get("call_id") not in started
        if step.get("state") == "started" and (unstarted or step.get("kind") == "mcp"):
            step = {**step, "state": "pending"}
        out.append(step)
    return out


def fill_markers(text: str, steps: Iterable[PendingStep]) -> str:
    """The held text with each step's output in its marker's place."""
    for step in steps:
        text = text.replace(step.marker, step.output)
    return text
