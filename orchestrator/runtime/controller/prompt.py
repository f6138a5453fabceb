"""A turn's prompt: resolved when ``run`` arrives, held on disk while hooks decide it, and
committed with its attachments (the one place that commits a prompt)."""

from __future__ import annotations

import dataclasses

from orchestrator.adapters.session import HeldCommand, HeldPromptRecord
from orchestrator.capabilities.skills import turn_rules
from orchestrator.capabilities.tools.registry import claude_code_names
from orchestrator.config.mcp import READ_RESOURCE_TOOL
from orchestrator.core.history import UserMessage, item_from_json, item_to_json
from orchestrator.core.interceptors import ContinueWith, PromptAction
from orchestrator.core.segments import (
    FileRefSegment,
    Segment,
    TextSegment,
    WorkflowInvokeSegment,
)
from orchestrator.runtime.command_files import load_command_files
from orchestrator.runtime.controller.conversation import commit
from orchestrator.runtime.controller.state import ControllerState
from orchestrator.runtime.custom_commands import (
    CommandSpec,
    Expansion,
    PendingStep,
    expand_invocation,
    find_invocation,
)
from orchestrator.runtime.submit import Submission, resolve_submission


def held_record(submission: Submission, turn: int) -> HeldPromptRecord:
    """The record of a prompt held for its ``UserPromptSubmit`` hooks."""
    return HeldPromptRecord(
        phase="held",
        turn=turn,
        message=item_to_json(submission.message()),
        attach=[item_to_json(item) for item in submission.attach],
        preread=[segment.model_dump(mode="json") for segment in submission.preread],
        steps=[step.to_json() for step in submission.steps],
        command=submission.command,
        snapshot=submission.snapshot,
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
        steps=[PendingStep.from_json(step) for step in record.steps],
        command=record.command,
        snapshot=record.snapshot,
    )


def resolve_prompt(
    state: ControllerState, segments: list[Segment], client_request_id: str | None
) -> Submission:
    """Resolve a submit's refs now; failures become alerts and placeholders.
    ``client_request_id``: the ``run``'s, kept on its user message."""
    servers = state.board.mcp
    # Only where read_mcp_resource is offered (a server with resources, permissions).
    readable = (
        [s.name for s in servers.servers if s.has_resources and s.status == "running"]
        if servers is not None and state.tools.registry.get(READ_RESOURCE_TOOL) is not None
        else []
    )
    if _may_invoke(segments):
        refresh_commands(state)
    found = find_invocation(segments, state.commands)
    spec = found[0] if found is not None else None
    if found is not None and spec is not None:
        _, invocation, user_refs = found
        expansion = expand_invocation(
            spec,
            invocation,
            user_refs,
            exists=state.fs.exists,
            bash_available=state.tools.registry.get("bash") is not None,
        )
        submission = _expanded(state, expansion, readable)
        grant_command(state, submission.command)
    else:
        submission = resolve_submission(
            segments, fs=state.fs, config=state.config, mcp_readable=readable
        )
    submission = dataclasses.replace(submission, request_id=client_request_id)
    for alert in submission.alerts:
        state.alert(alert.level, alert.source, alert.message)
    return submission


def refresh_commands(state: ControllerState) -> None:
    """Read the command folders again (a file added or edited since counts at once); each
    file refused is alerted once."""
    files = load_command_files(state.config.workspace, state.config.skills)
    state.commands.take_files(files.catalog)
    said = state.commands.said
    for refusal in files.refused:
        if refusal not in said:
            said.add(refusal)
            state.alert("warn", "commands", f"command file skipped: {refusal}")
    for spec in files.catalog.files:
        if spec.allowed_tools and not spec.trusted and f"grant:{spec.path}" not in said:
            said.add(f"grant:{spec.path}")
            state.alert(
                "warn",
                "commands",
                f"the workspace's command /{spec.name} ({spec.path}) lists allowed-tools "
                f"({', '.join(spec.allowed_tools)}), which only your own commands may grant: "
                "ignored, those tools ask or are refused as usual. To let it grant them, keep "
                "it in ~/.config/pod/commands/ or ~/.claude/commands/.",
            )


def held_command(spec: CommandSpec) -> HeldCommand:
    """What the turn of ``spec`` keeps of it while its prompt is held: its grants (a command
    of the user's own folders only; a workspace's grants nothing, said once when it is
    read) and its model."""
    model = spec.model.strip() if spec.model is not None else None
    return HeldCommand(
        name=spec.name,
        path=spec.path,
        grants=list(spec.allowed_tools) if spec.trusted else [],
        model=None if not model or model.lower() == "inherit" else model,
    )


def grant_command(state: ControllerState, command: HeldCommand | None, *, say: bool = True) -> None:
    """Allow a command's ``allowed-tools`` until the turn ends (its ``!`` lines included):
    when it is invoked, and again when a pod takes its held prompt back after a restart or a
    load (``say`` False: the entries not understood were said the first time)."""
    if command is None or not command.grants:
        return
    rules, unreadable = turn_rules(command.grants, claude_code_names())
    state.approvals.policy.grant_for_turn(rules)
    if unreadable and say:
        state.alert(
            "warn",
            "commands",
            f"/{command.name}: allowed-tools entries not understood, so not allowed: "
            + ", ".join(unreadable),
        )


def _may_invoke(segments: list[Segment]) -> bool:
    first = segments[0] if segments else None
    if isinstance(first, WorkflowInvokeSegment):
        return True
    return isinstance(first, TextSegment) and first.text.lstrip().startswith("/")


def _expanded(state: ControllerState, expansion: Expansion, readable: list[str]) -> Submission:
    """A command's submit: the model reads the expansion (its own refs resolved like a
    person's), the user message keeps the invocation, and the refs typed beside it attach."""
    body = resolve_submission(
        expansion.body, fs=state.fs, config=state.config, mcp_readable=readable
    )
    attach, preread, alerts = list(body.attach), list(body.preread), list(body.alerts)
    if expansion.user_refs:
        typed = resolve_submission(
            expansion.user_refs, fs=state.fs, config=state.config, mcp_readable=readable
        )
        attach += typed.attach
        preread += typed.preread
        alerts += typed.alerts
    return Submission(
        segments=[expansion.invocation, *expansion.user_refs],
        text=body.text,
        attach=attach,
        preread=preread,
        alerts=alerts,
        steps=list(expansion.steps),
        command=held_command(expansion.spec) if expansion.spec.prompt is None else None,
    )


def commit_prompt(
    state: ControllerState,
    submission: Submission,
    message: UserMessage,
    decision: PromptAction,
) -> None:
    """Commit the prompt's user message, then its attachments and what the prompt's hooks
    added (``decision``, when a :class:`ContinueWith`), and leave its refs to pre-read."""
    state.prompt_seq = commit(state, message).seq
    extra = decision.items if isinstance(decision, ContinueWith) else ()
    for item in [*submission.attach, *extra]:
        commit(state, item)
    state.opening.preread = submission.preread


def request_turn(state: ControllerState, request_id: str) -> int | None:
    """The turn a ``run`` with this client request id committed its user message in, or
    holds its prompt in (hooks deciding); None when no such run is in the session.

    A scan, not an index: a ``run`` is rare next to its rounds, and a rewind that drops the
    message makes the id new again, as the conversation it went with is gone."""
    held = state.opening.prompt
    if held is not None and held.request_id == request_id:
        return state.history.turn
    for item in reversed(state.transcript.view()):
        if isinstance(item, UserMessage) and item.request_id == request_id:
            return item.turn
    return None


__all__ = [
    "commit_prompt",
    "grant_command",
    "held_command",
    "held_record",
    "held_submission",
    "refresh_commands",
    "request_turn",
    "resolve_prompt",
]
