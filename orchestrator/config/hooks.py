"""``[hooks]``: commands the user runs at points of a turn, in Claude Code's settings shape.

The TOML mirrors Claude Code's ``hooks`` object line for line, so a user translates theirs
without thinking (docs/hooks.md)::

    [[hooks.PreToolUse]]
    matcher = "bash"
    [[hooks.PreToolUse.hooks]]
    type = "command"
    command = "${XDG_CONFIG_HOME:-$HOME/.config}/pod/hooks/no-rm.sh"
    timeout = 30

Hooks are grants: only the user's config (or a parent pod's, for its child) may set them.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from orchestrator.core.hook_events import HookEvent

DEFAULT_TIMEOUT_S = 60.0
"""Claude Code's default: a hook that says nothing for a minute is ended."""

MAX_TIMEOUT_S = 3600.0


class HookCommand(BaseModel):
    """One command a matcher runs."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, defer_build=True)

    type: Literal["command"] = "command"
    """Only ``command`` hooks exist here (Claude Code's ``prompt`` and ``agent`` hooks ask a
    model, which a hook of this pod does not)."""
    command: str = Field(min_length=1)
    """Run with ``/bin/bash -c`` in the workspace; the event's JSON arrives on stdin."""
    timeout: float = Field(default=DEFAULT_TIMEOUT_S, gt=0, le=MAX_TIMEOUT_S)
    """Seconds before the command (and all it started) is killed; that counts as a failure."""
    on_failure: Literal["block", "continue"] | None = None
    """What the hook's own failure (a timeout, a crash, a command not found, an exit code other
    than 0 and 2, output that is not the JSON it claims to be) means: ``block`` refuses the
    call or prompt, ``continue`` only alerts. Default: ``continue``, as in Claude Code."""
    sandbox: bool | None = None
    """Where the hook runs. Unset: outside the sandbox, as Claude Code runs it (it is your own
    command, from your own config), unless its command line names a file inside the
    workspace, which runs inside it (:mod:`orchestrator.capabilities.hooks.scripts`). ``true``: inside the
    commands' sandbox when ``[sandbox]`` puts ``bash`` there. ``false``: outside, and a
    workspace file it names runs only as the pod found it at start."""

    def failure(self, event: HookEvent) -> Literal["block", "continue"]:
        """What this hook's failure means at ``event`` (the same at every event: a hook that
        did not work is reported, and blocks only where ``on_failure = "block"`` says so)."""
        return self.on_failure or "continue"


class HookMatcher(BaseModel):
    """Commands for the events whose subject (a tool name, a trigger) the matcher matches."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, defer_build=True)

    matcher: str = ""
    """A name, or a regular expression matched against the whole name; ``""`` or ``*`` match
    everything. Tool events match this pod's tool name or its Claude Code name (``bash`` and
    ``Bash`` both match ``bash``)."""
    hooks: list[HookCommand] = Field(default_factory=list)

    @field_validator("matcher")
    @classmethod
    def _compiles(cls, value: str) -> str:
        if value not in ("", "*"):
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"matcher {value!r} is not a regular expression: {exc}") from None
        return value

    def matches(self, subject: str | None, *aliases: str) -> bool:
        """Whether this matcher applies to ``subject`` (or one of its other names)."""
        if self.matcher in ("", "*") or subject is None:
            return True
        return any(re.fullmatch(self.matcher, name) for name in (subject, *aliases) if name)


class HooksConfig(BaseModel):
    """The user's hooks by event (docs/hooks.md)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, defer_build=True)

    PreToolUse: list[HookMatcher] = Field(default_factory=list)
    """Before a tool call runs: block it, let it run without asking, make it ask, or rewrite
    its input."""
    PostToolUse: list[HookMatcher] = Field(default_factory=list)
    """After a tool call ran, before the model reads its result: add to what it reads."""
    UserPromptSubmit: list[HookMatcher] = Field(default_factory=list)
    """Before a prompt is committed: block it, or add context after it."""
    Stop: list[HookMatcher] = Field(default_factory=list)
    """When the model ends its turn: make it go on, with a reason."""
    SubagentStop: list[HookMatcher] = Field(default_factory=list)
    """When a child pod's model ends its turn (runs in the child)."""
    PreCompact: list[HookMatcher] = Field(default_factory=list)
    """Before the conversation is compacted (matcher: ``manual`` or ``auto``)."""
    SessionStart: list[HookMatcher] = Field(default_factory=list)
    """When the pod starts (``startup``), continues a session (``resume``) or has compacted
    (``compact``); what it prints is context for the next turn."""
    Notification: list[HookMatcher] = Field(default_factory=list)
    """When a person is needed: an approval waits (matcher: ``permission_prompt``), or an MCP
    server asks for input (``elicitation_dialog``)."""

    def for_event(self, event: HookEvent) -> list[HookMatcher]:
        """The matchers of one event."""
        matchers: list[HookMatcher] = getattr(self, event)
        return matchers

    def commands(
        self, event: HookEvent, subject: str | None = None, *aliases: str
    ) -> list[HookCommand]:
        """The commands to run for an event, in config order, each command once."""
        found: dict[str, HookCommand] = {}
        for matcher in self.for_event(event):
            if matcher.matches(subject, *aliases):
                for hook in matcher.hooks:
                    found.setdefault(hook.command, hook)
        return list(found.values())

    def configured(self) -> list[tuple[HookEvent, HookMatcher, HookCommand]]:
        """Every configured command with its event and matcher (what ``pod status`` lists)."""
        return [
            (event, matcher, hook)
            for event in HookEvent
            for matcher in self.for_event(event)
            for hook in matcher.hooks
        ]
