"""Our protocol and ACP's, side by side: pure functions from one to the other.

Prompt blocks become our segments (so an editor's attached file is an ``@file`` ref with the
same caps, scope and errors as one typed in the terminal); pod events and history items become
``session/update`` payloads; a ``run_end`` result becomes a stop reason. Nothing here does
I/O, so every mapping is tested on plain data (``tests/acp/test_mapping.py``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote, urlparse

from acp import schema

from cli.acp.chunks import SessionUpdate
from cli.acp.web import block_updates
from cli.errors import CliError
from orchestrator.capabilities.tools.base import ToolError
from orchestrator.capabilities.tools.files import apply_edit
from orchestrator.capabilities.tools.registry import acp_kinds
from orchestrator.core.history import (
    AssistantMessage,
    Item,
    SystemMessage,
    ToolResult,
    UserMessage,
)
from orchestrator.core.preread import PREREAD_ORIGIN, preread_call
from orchestrator.core.segments import FileRefSegment, PasteSegment, Segment, TextSegment
from orchestrator.protocol import CommandData

AcpToolKind = Literal[
    "read", "edit", "delete", "move", "search", "execute", "think", "fetch", "other"
]
StopReason = Literal["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]

TOOL_KINDS: dict[str, AcpToolKind] = dict(acp_kinds())
"""How an editor should draw each built-in tool, as each tool says (``acp_kind``); anything
else is ``other``."""

STOP_REASONS: dict[str, StopReason] = {
    "finished": "end_turn",
    "limit_reached": "max_turn_requests",
    "paused": "cancelled",
    "cancelled": "cancelled",
}
"""``run_end`` results as ACP stop reasons; ``errored`` is a JSON-RPC error instead."""

SLASH_COMMANDS: dict[str, str] = {
    "cancel": "Cancel the turn for good (session/cancel only pauses it, so it can be resumed)",
    "status": "The pod's state, model, context use and cost",
    "compact": "Summarise older turns to free context; /compact FOCUS says what matters",
    "rewind": "Go back to before a prompt: /rewind lists them; /rewind N [code|conversation] "
    "restores the files and the conversation (or one of them)",
    "fork": "Start a new session from this conversation (/fork NAME titles it)",
}

COMMAND_HINTS: dict[str, str] = {
    "compact": "what the summary should keep",
    "rewind": "the prompt's number, then code or conversation to restore only that",
    "fork": "a title for the new session",
}


class PromptRejected(CliError, ValueError):
    """A prompt block the pod cannot take; the message says which and why."""


def available_commands(
    pod_commands: Sequence[CommandData] = (),
) -> schema.AvailableCommandsUpdate:
    """The ``available_commands_update`` a session announces when it opens: ours, then the
    pod's custom commands (``list_commands``; one of ours keeps its name over a file's)."""
    commands = [
        schema.AvailableCommand(
            name=name,
            description=description,
            input=schema.AvailableCommandInput(
                root=schema.UnstructuredCommandInput(hint=COMMAND_HINTS[name])
            )
            if name in COMMAND_HINTS
            else None,
        )
        for name, description in SLASH_COMMANDS.items()
    ]
    commands += [
        schema.AvailableCommand(
            name=command.name,
            description=command.description or f"/{command.name}",
            input=schema.AvailableCommandInput(
                root=schema.UnstructuredCommandInput(hint=command.argument_hint)
            )
            if command.argument_hint
            else None,
        )
        for command in pod_commands
        if command.shadowed_by is None and command.name not in SLASH_COMMANDS
    ]
    return schema.AvailableCommandsUpdate(
        session_update="available_commands_update", available_commands=commands
    )


def slash_command(blocks: list[Any]) -> tuple[str, str] | None:
    """``("compact", "the tests")`` for a prompt that is one of our slash commands, else None."""
    if len(blocks) != 1 or not isinstance(blocks[0], schema.TextContentBlock):
        return None
    text = blocks[0].text.strip()
    if not text.startswith("/"):
        return None
    name, _, rest = text[1:].partition(" ")
    if name not in SLASH_COMMANDS:
        return None
    return name, rest.strip()


def _workspace_path(uri: str, workspace: Path) -> str | None:
    """The workspace-relative path a ``file://`` URI names, or None for anything else."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    path = Path(unquote(parsed.path))
    try:
        return path.relative_to(workspace).as_posix()
    except ValueError:
        # Outside the workspace: let the scoped file system say so (read roots may allow it).
        return os.fspath(path)


def prompt_segments(blocks: Iterable[Any], workspace: Path) -> list[Segment]:
    """ACP prompt blocks as our segments; raises PromptRejected for a block we cannot take.

    Text stays text (the pod scans it for ``@path`` mentions as it does every client's). A
    ``resource_link`` or an embedded text ``resource`` naming a file becomes a file ref, so
    the file is read through the scoped file system, capped and checked like any other, and
    the model reads the file as it is on disk. An embedded resource that is not a file (an
    editor selection with another URI scheme) is taken as a paste of its text.
    """
    segments: list[Segment] = []
    for number, block in enumerate(blocks, start=1):
        if isinstance(block, schema.TextContentBlock):
            if block.text:
                segments.append(TextSegment(text=block.text))
        elif isinstance(block, schema.ResourceContentBlock):
            path = _workspace_path(block.uri, workspace)
            if path is None:
                raise PromptRejected(
                    f"prompt block {number}: only file:// links can be attached, not {block.uri}"
                )
            segments.append(FileRefSegment(path=path))
        elif isinstance(block, schema.EmbeddedResourceContentBlock):
            resource = block.resource
            path = _workspace_path(resource.uri, workspace)
            if path is not None:
                segments.append(FileRefSegment(path=path))
            elif isinstance(resource, schema.TextResourceContents):
                segments.append(PasteSegment(id=f"resource-{number}", text=resource.text))
            else:
                raise PromptRejected(
                    f"prompt block {number}: binary resources are not supported ({resource.uri})"
                )
        else:
            kind = getattr(block, "type", type(block).__name__)
            raise PromptRejected(
                f"prompt block {number}: {kind} blocks are not supported; attach an image as a "
                "file link instead"
            )
    if not any(isinstance(s, TextSegment) and s.text.strip() for s in segments) and not any(
        isinstance(s, FileRefSegment | PasteSegment) for s in segments
    ):
        raise PromptRejected("the prompt is empty")
    return segments


def coalesce_deltas(events: list[Any]) -> list[Any]:
    """Consecutive text (or thinking) deltas joined into one, so an editor that fell behind
    gets one chunk for what arrived meanwhile instead of one message per delta."""
    out: list[Any] = []
    for event in events:
        previous = out[-1] if out else None
        if (
            previous is not None
            and event.event in ("text_delta", "thinking_delta")
            and previous.event == event.event
        ):
            out[-1] = type(event)(
                event.event, {**previous.data, "text": previous.data["text"] + event.data["text"]}
            )
        else:
            out.append(event)
    return out


def mcp_servers_config(servers: Iterable[Any]) -> dict[str, dict[str, Any]]:
    """An editor's ``mcpServers`` as ``[mcp.servers]`` entries (see docs/mcp.md).

    They come from the user's editor, so they are trusted as the command line is; their tools
    still ask before they run, as any MCP server's do by default.
    """
    out: dict[str, dict[str, Any]] = {}
    for server in servers:
        if isinstance(server, schema.McpServerStdio):
            out[server.name] = {
                "command": server.command,
                "args": list(server.args),
                "env": {variable.name: variable.value for variable in server.env},
            }
        elif isinstance(server, schema.HttpMcpServer):
            out[server.name] = {
                "url": server.url,
                "headers": {header.name: header.value for header in server.headers},
            }
        else:
            raise PromptRejected(
                f"MCP server {getattr(server, 'name', '?')}: only stdio and HTTP servers are "
                "supported"
            )
    return out


def stop_reason(result: str) -> StopReason | None:
    """The stop reason of a ``run_end`` result; None for ``errored``."""
    return STOP_REASONS.get(result)


def tool_title(name: str, arguments: dict[str, Any]) -> str:
    """A short title an editor shows for a call: the command, the path, or the tool."""
    for key in ("command", "path", "pattern", "query", "url"):  # url: the local web_fetch
        value = arguments.get(key)
        if isinstance(value, str) and value:
            first = value.splitlines()[0]
            return f"{name}: {first[:120]}"
    return name


def tool_locations(arguments: dict[str, Any], workspace: Path) -> list[schema.ToolCallLocation]:
    """The file a call touches, absolute, so an editor can follow it."""
    path = arguments.get("path")
    if not isinstance(path, str) or not path:
        return []
    absolute = Path(path) if os.path.isabs(path) else workspace / path
    line = arguments.get("offset")
    return [
        schema.ToolCallLocation(
            path=os.fspath(absolute), line=line if isinstance(line, int) else None
        )
    ]


def tool_call(
    call_id: str, name: str, arguments: dict[str, Any], workspace: Path
) -> schema.ToolCallStart:
    """The ``tool_call`` update for a call whose arguments are complete."""
    return schema.ToolCallStart(
        session_update="tool_call",
        tool_call_id=call_id,
        title=tool_title(name, arguments),
        kind=TOOL_KINDS.get(name, "other"),
        status="pending",
        locations=tool_locations(arguments, workspace),
        raw_input=arguments,
    )


def held_content(data: dict[str, Any]) -> schema.ContentToolCallContent | None:
    """For a request to keep what a sandboxed command planted (``held``): the paths and the
    diff of what it wrote, as text (it is not an edit the editor could show as one)."""
    held = data.get("held")
    if not held:
        return None
    text = "Held aside (undone until you allow it): " + ", ".join(str(p) for p in held)
    if data.get("diff"):
        text += "\n\n" + str(data["diff"])
    return _text_content(text)


def _text_content(text: str) -> schema.ContentToolCallContent:
    return schema.ContentToolCallContent(
        type="content", content=schema.TextContentBlock(type="text", text=text)
    )


def tool_running(call_id: str) -> schema.ToolCallProgress:
    """The call started running."""
    return schema.ToolCallProgress(
        session_update="tool_call_update", tool_call_id=call_id, status="in_progress"
    )


def tool_output(call_id: str, text: str) -> schema.ToolCallProgress:
    """Output a running command printed so far (the whole of it, as ACP replaces content)."""
    return schema.ToolCallProgress(
        session_update="tool_call_update",
        tool_call_id=call_id,
        status="in_progress",
        content=[_text_content(text)],
    )


def tool_finished(
    call_id: str,
    summary: str,
    content: str | None,
    *,
    is_error: bool,
    diff: schema.FileEditToolCallContent | None = None,
) -> schema.ToolCallProgress:
    """The call's result: its summary and content, and the diff of an edit when known."""
    text = summary if content is None else f"{summary}\n{content}"
    parts: list[Any] = [_text_content(text)]
    if diff is not None and not is_error:
        parts.append(diff)
    return schema.ToolCallProgress(
        session_update="tool_call_update",
        tool_call_id=call_id,
        status="failed" if is_error else "completed",
        content=parts,
        # The output itself is in ``content`` only: editors that also print rawOutput (acpx)
        # would show it twice.
        raw_output={
            "summary": summary,
            "is_error": is_error,
            "output_chars": len(content or ""),
        },
    )


def edit_diff(
    name: str, arguments: dict[str, Any], workspace: Path, old_text: str | None
) -> schema.FileEditToolCallContent | None:
    """The diff content of an edit or write call, from its arguments and the file before it."""
    path = arguments.get("path")
    if not isinstance(path, str):
        return None
    absolute = os.fspath(Path(path) if os.path.isabs(path) else workspace / path)
    if name == "write_file" and isinstance(arguments.get("content"), str):
        return schema.FileEditToolCallContent(
            type="diff", path=absolute, old_text=old_text, new_text=arguments["content"]
        )
    if name == "edit_file" and old_text is not None:
        try:
            edited, *_ = apply_edit(
                old_text,
                str(arguments.get("old_string", "")),
                str(arguments.get("new_string", "")),
                bool(arguments.get("replace_all", False)),
                path,
            )
        except ToolError:
            return None  # the edit fails: its result says why, there is no diff to show
        return schema.FileEditToolCallContent(
            type="diff", path=absolute, old_text=old_text, new_text=edited
        )
    return None


def preread_updates(
    text: str, origin: str, seq: int | None, workspace: Path
) -> list[SessionUpdate]:
    """A preread that went as a ``[File: …]`` system message (thinking on), as the finished
    Read call a synthetic read shows; nothing for any other system message."""
    call = preread_call(text, seq=seq) if origin == PREREAD_ORIGIN else None
    if call is None:
        return []
    return [
        tool_call(call.call_id, call.name, call.arguments, workspace),
        tool_finished(call.call_id, call.summary, call.content, is_error=False),
    ]


def permission_options() -> list[schema.PermissionOption]:
    """The choices of a ``session/request_permission``, as our approve/deny answers."""
    return [
        schema.PermissionOption(option_id="once", name="Allow once", kind="allow_once"),
        schema.PermissionOption(
            option_id="session", name="Allow for this session", kind="allow_always"
        ),
        schema.PermissionOption(option_id="deny", name="Deny", kind="reject_once"),
    ]


def permission_answer(response: schema.RequestPermissionResponse) -> tuple[str, dict[str, Any]]:
    """Our ``approve``/``deny`` method and params for an editor's answer (without the id)."""
    outcome = response.outcome
    if isinstance(outcome, schema.AllowedOutcome) and outcome.option_id in ("once", "session"):
        return "approve", {"scope": outcome.option_id}
    if isinstance(outcome, schema.AllowedOutcome):
        return "deny", {"message": "denied in the editor"}
    return "deny", {
        "message": "the editor withdrew the question (the prompt was cancelled)",
        "asked": False,
    }


ElicitationAction = Literal["accept", "decline", "cancel"]


def elicitation_message(data: dict[str, Any]) -> str:
    """What the editor shows for a request for input: the server's words, and who asks (the
    editor's form has no other place to say which server wants it)."""
    where = f", in child pod {data['pod']}" if data.get("pod") else ""
    return f"{data['message']} (MCP server {data['server']}{where})"


def elicitation_mode(
    data: dict[str, Any], session_id: str, tool_call_id: str | None
) -> schema.ElicitationFormSessionMode | schema.ElicitationUrlSessionMode:
    """The session-scoped ``elicitation/create`` mode of an ``elicitation_request``; raises
    ValueError (pydantic's ValidationError) for a form or URL ACP's schema cannot carry."""
    if data.get("mode") == "url":
        return schema.ElicitationUrlSessionMode(
            session_id=session_id,
            tool_call_id=tool_call_id,
            # The pod's id is unique per request, so it names the elicitation for
            # ``elicitation/complete`` as well.
            elicitation_id=str(data["id"]),
            url=data["url"],
        )
    return schema.ElicitationFormSessionMode(
        session_id=session_id,
        tool_call_id=tool_call_id,
        requested_schema=schema.ElicitationSchema.model_validate(data.get("schema") or {}),
    )


def elicitation_answer(
    response: schema.AcceptElicitationResponse
    | schema.DeclineElicitationResponse
    | schema.CancelElicitationResponse
    | schema.OtherElicitationResponse,
) -> tuple[ElicitationAction, dict[str, Any] | None]:
    """Our ``answer_elicitation`` action and content for the editor's answer."""
    if isinstance(response, schema.AcceptElicitationResponse):
        return "accept", response.content
    if isinstance(response, schema.CancelElicitationResponse):
        return "cancel", None
    # An action this version of ACP does not know is no answer the pod could take: the
    # server is told no rather than left to guess.
    return "decline", None


def history_updates(items: Iterable[Item], workspace: Path) -> list[SessionUpdate]:
    """A session's history replayed as the updates an editor saw while it happened."""
    updates: list[SessionUpdate] = []
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    for item in items:
        if isinstance(item, UserMessage):
            updates.append(
                schema.UserMessageChunk(
                    session_update="user_message_chunk",
                    content=schema.TextContentBlock(type="text", text=item.text),
                )
            )
        elif isinstance(item, AssistantMessage):
            updates += block_updates(item.blocks)
            for use in item.tool_uses:
                calls[use.id] = (use.name, use.input)
                updates.append(tool_call(use.id, use.name, use.input, workspace))
        elif isinstance(item, ToolResult):
            updates.append(
                tool_finished(item.call_id, item.summary, item.content, is_error=item.is_error)
            )
        elif isinstance(item, SystemMessage):
            updates += preread_updates(item.text, item.origin, item.seq, workspace)
    return updates
