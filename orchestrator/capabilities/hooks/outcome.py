"""What a hook's exit code and output mean, event by event (Claude Code's contract), and what
the hooks of one event decided together. Pure functions over finished runs.

- exit 0: success; stdout may be a JSON object with decisions (``HookOutput``); plain text
  is context for the model after ``UserPromptSubmit`` and ``SessionStart``, ignored elsewhere;
- exit 2: a block; stderr is the reason: the call is refused (``PreToolUse``), the model reads
  it (``PostToolUse``, ``Stop``), the prompt is refused (``UserPromptSubmit``, the person
  reads it), or the person reads it (the others);
- anything else (another exit code, ``127`` for a command not found, a timeout, a signal, a
  hook that could not start, was refused, or whose JSON is not the contract's): a failure of
  the hook itself; the person is alerted and the call or prompt goes on, as in Claude Code,
  unless the hook's ``on_failure`` is ``block``, which refuses it (fail closed).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from orchestrator.core.interceptors import HookEvent

Outcome = Literal["ok", "failed", "timeout", "interrupted"]
Permission = Literal["allow", "ask", "deny"]

_REASON_MAX = 4000
"""Characters of a hook's stderr or reason passed on: a chatty hook must not flood the model."""


@dataclass(frozen=True, slots=True, kw_only=True)
class HookRun:
    """One hook command, finished."""

    command: str
    outcome: Outcome
    code: int | None = None
    """The exit code (negative: killed by that signal); None when it never exited."""
    stdout: str = ""
    stderr: str = ""
    ms: int = 0
    detail: str = ""
    """Why it failed, when it did not get to exit (could not start, timed out)."""
    on_failure: Literal["block", "continue"] = "continue"
    quiet: bool = False
    """The person was already alerted about this failure (a refused hook): no new alert."""


class _SpecificOutput(BaseModel):
    model_config = ConfigDict(extra="allow")

    hookEventName: str | None = None
    permissionDecision: Permission | None = None
    permissionDecisionReason: str | None = None
    updatedInput: dict[str, Any] | None = None
    additionalContext: str | None = None


class HookOutput(BaseModel):
    """The JSON a hook may print on stdout (exit 0); fields we do not know are ignored, as
    Claude Code ignores them."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    continue_: bool = Field(True, alias="continue")
    stopReason: str | None = None
    suppressOutput: bool | None = None
    systemMessage: str | None = None
    decision: Literal["approve", "block"] | None = None
    reason: str | None = None
    hookSpecificOutput: _SpecificOutput | None = None


@dataclass(slots=True)
class Verdict:
    """What the hooks of one event decided together."""

    permission: Permission | None = None
    """``PreToolUse``: deny wins over ask, ask over allow; None: no hook had a say."""
    updated_input: dict[str, Any] | None = None
    """``PreToolUse``: the first hook's rewrite of the call's input (Claude Code's words)."""
    block: bool = False
    """``UserPromptSubmit``: refuse the prompt; ``Stop``: go on; ``PostToolUse``: feedback."""
    reasons: list[str] = field(default_factory=list)
    """Why: for the model (a denial, ``PostToolUse`` feedback, ``Stop``) or the person (a
    refused prompt)."""
    context: list[str] = field(default_factory=list)
    """Added for the model (``additionalContext``; plain stdout where that is context)."""
    stop: str | None = None
    """A hook said ``"continue": false``: stop the turn, with this reason."""
    alerts: list[tuple[str, str]] = field(default_factory=list)
    """(level, message) for the person: failures, ``systemMessage``, non-blocking stderr."""

    @property
    def reason(self) -> str:
        """The reasons, one per line."""
        return "\n".join(self.reasons)


_RANK: dict[Permission, int] = {"allow": 0, "ask": 1, "deny": 2}


def _clip(text: str) -> str:
    text = text.strip()
    return text if len(text) <= _REASON_MAX else text[:_REASON_MAX] + " […]"


def _name(command: str) -> str:
    return command if len(command) <= 80 else command[:77] + "..."


def decide(event: HookEvent, runs: Sequence[HookRun]) -> Verdict:
    """The verdict of ``event``'s hooks, in the order they were configured."""
    verdict = Verdict()
    for run in runs:
        _read(event, run, verdict)
    return verdict


def _permit(verdict: Verdict, permission: Permission, reason: str | None) -> None:
    if verdict.permission is None or _RANK[permission] > _RANK[verdict.permission]:
        verdict.permission = permission
    if reason and permission != "allow":
        verdict.reasons.append(_clip(reason))


def _fail(event: HookEvent, run: HookRun, why: str, verdict: Verdict) -> None:
    message = f"{event} hook {_name(run.command)!r} failed: {why}"
    alerts = [] if run.quiet else verdict.alerts
    if run.on_failure == "block" and event is HookEvent.PRE_TOOL_USE:
        alerts.append(("warn", message + "; the call was blocked (on_failure)"))
        _permit(verdict, "deny", f"blocked: {message} (the hook fails closed)")
    elif run.on_failure == "block" and event is HookEvent.USER_PROMPT_SUBMIT:
        alerts.append(("warn", message + "; the prompt was refused (on_failure)"))
        verdict.block = True
        verdict.reasons.append(message)
    elif event is HookEvent.PRE_TOOL_USE:
        alerts.append(("warn", message + '; the call goes on (on_failure = "block" refuses it)'))
    elif event is HookEvent.USER_PROMPT_SUBMIT:
        alerts.append(("warn", message + '; the prompt goes on (on_failure = "block" refuses it)'))
    else:
        alerts.append(("warn", message))


def _read(event: HookEvent, run: HookRun, verdict: Verdict) -> None:
    if run.outcome == "interrupted":
        return  # never ran to the end: it counts as not run
    if run.outcome == "timeout":
        _fail(event, run, run.detail or "timed out", verdict)
        return
    if run.outcome == "failed" or run.code is None:
        _fail(event, run, run.detail or "it did not run", verdict)
        return
    if run.code == 2:
        _blocked(event, _clip(run.stderr) or f"{event} hook {_name(run.command)!r}", verdict)
        return
    if run.code != 0:
        why = f"exit code {run.code}" if run.code > 0 else f"killed by signal {-run.code}"
        said = _clip(run.stderr)
        _fail(event, run, f"{why}: {said}" if said else why, verdict)
        return
    text = run.stdout.strip()
    if text.startswith("{"):
        try:
            output = HookOutput.model_validate_json(text)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "output"
            _fail(
                event,
                run,
                f"its JSON output is not the hook contract's ({where}: {first['msg']})",
                verdict,
            )
            return
        _apply(event, output, verdict)
    elif text and event in (HookEvent.USER_PROMPT_SUBMIT, HookEvent.SESSION_START):
        verdict.context.append(_clip(text))


def _blocked(event: HookEvent, reason: str, verdict: Verdict) -> None:
    if event is HookEvent.PRE_TOOL_USE:
        _permit(verdict, "deny", reason)
    elif event in (
        HookEvent.POST_TOOL_USE,
        HookEvent.USER_PROMPT_SUBMIT,
        HookEvent.STOP,
        HookEvent.SUBAGENT_STOP,
    ):
        verdict.block = True
        verdict.reasons.append(reason)
    else:
        verdict.alerts.append(("warn", f"{event} hook: {reason}"))


def _apply(event: HookEvent, output: HookOutput, verdict: Verdict) -> None:
    if output.systemMessage:
        verdict.alerts.append(("info", _clip(output.systemMessage)))
    if not output.continue_:
        verdict.stop = _clip(output.stopReason or "") or f"a {event} hook stopped the turn"
    specific = output.hookSpecificOutput
    if event is HookEvent.PRE_TOOL_USE:
        if specific is not None and specific.permissionDecision is not None:
            _permit(verdict, specific.permissionDecision, specific.permissionDecisionReason)
        elif output.decision is not None:  # the older form: approve / block
            _permit(verdict, "allow" if output.decision == "approve" else "deny", output.reason)
        updated = specific.updatedInput if specific is not None else None
        if updated is not None and verdict.updated_input is None:
            verdict.updated_input = updated
        return
    if output.decision == "block" and event is not HookEvent.SESSION_START:
        _blocked(event, _clip(output.reason or "") or f"a {event} hook blocked it", verdict)
    if specific is not None and specific.additionalContext:
        verdict.context.append(_clip(specific.additionalContext))
