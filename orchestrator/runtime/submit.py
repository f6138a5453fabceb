"""Submit resolution: what a ``run``'s segments become, as data; nothing here commits.

A submit becomes a :class:`Submission`: the user message's text for the model, the items to
commit right after it (``@file`` bodies in the ``system_message`` style, ``@knowledge`` bodies in
both styles), the paths to pre-read inside the turn (the ``synthetic_read`` style), and the
alerts a person should see (refs that could not be attached, segments this pod cannot take).
The controller commits it when the turn starts, after the prompt-submit interceptors agree.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Collection
from dataclasses import dataclass, field

from orchestrator.adapters.scoped_fs import ScopedFS
from orchestrator.adapters.session import CheckpointRecord, HeldCommand
from orchestrator.capabilities.knowledge import resolve_knowledge_refs
from orchestrator.config.mcp import READ_RESOURCE_TOOL
from orchestrator.config.model import PodConfig
from orchestrator.core.history import AssistantMessage, Item, ToolUseBlock, UserMessage
from orchestrator.core.mentions import expand_mentions
from orchestrator.core.segments import (
    FileRefSegment,
    KnowledgeRefSegment,
    McpResourceRefSegment,
    Segment,
    UnknownSegment,
    WorkflowInvokeSegment,
    flatten_segments,
)
from orchestrator.runtime.custom_commands import PendingStep
from orchestrator.runtime.file_refs import is_image_name, resolve_segments


@dataclass(frozen=True, slots=True)
class Alert:
    """Something a person should see about a submit."""

    level: str
    source: str
    message: str


@dataclass(frozen=True, slots=True)
class Submission:
    """A resolved submit, ready to be committed when its turn starts."""

    segments: list[Segment]
    text: str
    """What the model reads as the user message (unresolved refs become placeholders)."""
    attach: list[Item] = field(default_factory=list)
    """Items committed right after the user message, in order."""
    preread: list[FileRefSegment] = field(default_factory=list)
    """Refs read inside the turn as a synthetic ``read_file`` call (``synthetic_read``)."""
    alerts: list[Alert] = field(default_factory=list)
    request_id: str | None = None
    """The ``run``'s client request id, kept on the user message it commits."""
    steps: list[PendingStep] = field(default_factory=list)
    """What a custom command's expansion waits for (``!`` lines, an MCP prompt): ``text``
    holds a marker in each one's place until the turn has run it."""
    command: HeldCommand | None = None
    """The custom command it invokes: its grants and model for the turn."""
    snapshot: CheckpointRecord | None = None
    """The workspace's snapshot from before the command's ``!`` lines ran (its ``seq`` is
    set when the prompt is committed)."""

    def message(self) -> UserMessage:
        """The user message this submit commits (with the model its turn runs on, when a
        command's was decided for it)."""
        command = self.command
        model = command.model if command is not None and command.decided else None
        return UserMessage(
            segments=self.segments, text=self.text, request_id=self.request_id, model=model
        )


def run_segments(segments: list[Segment], *, exists: Callable[[str], bool]) -> list[Segment]:
    """A ``run``'s segments with the ``@path`` mentions of its text split out as file refs.

    Every client's text goes through the same rule, so ``pod run "see @a.py"`` and the same
    words typed (or pasted) in the terminal UI attach the same files.
    """
    return expand_mentions(segments, exists=exists)


def resolve_submission(
    segments: list[Segment],
    *,
    fs: ScopedFS,
    config: PodConfig,
    mcp_readable: Collection[str] = (),
) -> Submission:
    """Resolve a submit's refs now (blank input never gets here: the protocol refuses it).

    ``mcp_readable`` names the MCP servers whose resources ``read_mcp_resource`` reads."""
    alerts = _segment_alerts(segments)
    knowledge, knowledge_alerts = _knowledge_items(segments, config)
    resources, resource_alerts = _resource_reads(segments, mcp_readable)
    knowledge += resources
    knowledge_alerts += resource_alerts
    if config.file_ref_style == "synthetic_read":
        # Read later, inside the turn task, so a cancelled submit leaves no trace.
        # Images cannot be a read_file result: they are attached now, as in the other style.
        images: list[Segment] = [
            s for s in segments if isinstance(s, FileRefSegment) and _is_image_ref(s)
        ]
        attached = resolve_segments(fs, images, max_bytes=config.file_ref_max_bytes)
        alerts += [Alert("warn", "file_ref", f.alert_message) for f in attached.failures]
        refs = [s for s in segments if isinstance(s, FileRefSegment) and not _is_image_ref(s)]
        distinct = list(dict.fromkeys(ref.label for ref in refs))
        alerts += _too_many_refs(distinct[config.max_preread_files :], config.max_preread_files)
        return Submission(
            segments=list(segments),
            text=flatten_segments(segments),
            attach=[*attached.items, *knowledge],
            preread=refs,
            alerts=[*alerts, *knowledge_alerts],
        )
    resolution = resolve_segments(
        fs, segments, max_bytes=config.file_ref_max_bytes, max_refs=config.file_ref_max_count
    )
    alerts += [Alert("warn", "file_ref", f.alert_message) for f in resolution.failures]
    alerts += _too_many_refs(resolution.skipped, config.file_ref_max_count)
    return Submission(
        segments=list(segments),
        text=resolution.user_text,
        attach=[*resolution.items, *knowledge],
        alerts=[*alerts, *knowledge_alerts],
    )


def _is_image_ref(ref: FileRefSegment) -> bool:
    return ref.lines is None and is_image_name(ref.path)


def _too_many_refs(skipped: list[str], limit: int) -> list[Alert]:
    """One warning naming the refs past the per-message limit (the first few of them)."""
    if not skipped:
        return []
    named = ", ".join(f"@{label}" for label in skipped[:5])
    more = f" and {len(skipped) - 5} more" if len(skipped) > 5 else ""
    return [
        Alert(
            "warn",
            "file_ref",
            f"only {limit} files are attached per message; {named}{more} stayed as text",
        )
    ]


def _segment_alerts(segments: list[Segment]) -> list[Alert]:
    alerts: list[Alert] = []
    for seg in segments:
        if isinstance(seg, UnknownSegment):
            alerts.append(
                Alert(
                    "warn",
                    "input",
                    f"segment kind {seg.kind!r} is not supported by this pod; "
                    "the model sees a placeholder",
                )
            )
        elif isinstance(seg, WorkflowInvokeSegment):
            # A known command never gets here: the controller expands it first.
            alerts.append(Alert("warn", "input", f"no command named /{seg.slug}; sent as typed"))
    return alerts


def _knowledge_items(segments: list[Segment], config: PodConfig) -> tuple[list[Item], list[Alert]]:
    """Bodies of ``@knowledge:`` refs, attached like files; failures become alerts."""
    slugs = [s.slug for s in segments if isinstance(s, KnowledgeRefSegment)]
    if not slugs:
        return [], []
    if not config.memory.enabled:
        return [], [
            Alert("warn", "knowledge_ref", "memory is switched off; knowledge refs sent as text")
        ]
    items, failures = resolve_knowledge_refs(
        config.memory_root(), slugs, max_bytes=config.file_ref_max_bytes
    )
    return list(items), [Alert("warn", "knowledge_ref", failure) for failure in failures]


def _resource_reads(
    segments: list[Segment], readable: Collection[str]
) -> tuple[list[Item], list[Alert]]:
    """``@mcp:<server>:<uri>`` refs as a synthetic call of ``read_mcp_resource`` each, which
    the turn runs first (through the tool runner, like any call: its permissions, its live
    output, its crash rules); a ref to a server that cannot be read is an alert, and stays
    text."""
    refs = [s for s in segments if isinstance(s, McpResourceRefSegment)]
    calls: list[ToolUseBlock] = []
    alerts: list[Alert] = []
    for ref in dict.fromkeys(refs):
        if ref.server not in readable:
            why = (
                f"no MCP server named {ref.server} with resources is running"
                if readable
                else "no MCP server with resources is running"
            )
            alerts.append(
                Alert(
                    "warn",
                    "mcp_resource_ref",
                    f"could not attach @mcp:{ref.server}:{ref.uri}: {why}",
                )
            )
            continue
        call_id = f"toolu_mcpref_{secrets.token_hex(8)}"
        arguments: dict[str, object] = {"server": ref.server, "uri": ref.uri}
        calls.append(ToolUseBlock(id=call_id, name=READ_RESOURCE_TOOL, input=arguments))
    if not calls:
        return [], alerts
    return [AssistantMessage(blocks=list(calls), synthetic=True, stop_reason="tool_use")], alerts
