"""One permission rule and what it matches: a tool (or a kind of tool) and a subject pattern.

A rule is ``tool`` or ``tool(pattern)``. ``tool`` is a glob over tool names (``bash``,
``mcp__github__*``) or a kind: ``read`` (every tool that only reads), ``edit``/``write``
(every tool that writes files), as Claude Code's ``Read(...)`` and ``Edit(...)`` rules.

The pattern is matched against what the call is about, after the pod has worked out what that
really is (see :mod:`orchestrator.capabilities.permissions.policy`):

* a **path**, canonical (``./``, ``..`` and symlinks resolved) and relative to the workspace,
  with ``.gitignore``-like reach: a pattern without ``/`` matches that name at any depth, and a
  pattern that matches a directory covers everything below it;
* a **command**, each simple command of the line on its own, its name by basename and its words
  after quote removal; ``git push:*`` (Claude Code's prefix form) means ``git push`` with or
  without more words.
"""

from __future__ import annotations

import fnmatch
import posixpath
from dataclasses import dataclass

from orchestrator.capabilities.permissions.shell import SimpleCommand
from orchestrator.config.permissions import split_rule

KIND_ALIASES: dict[str, str] = {"read": "read", "edit": "edit", "write": "edit"}
"""Rule names that stand for every tool of a kind (case-insensitive)."""

TOOL_ALIASES: dict[str, str] = {"webfetch": "web_fetch"}
"""Claude Code's names of tools whose rules the pod reads as its own tool's (case-insensitive):
``WebFetch(domain:…)`` is ``web_fetch(domain:…)``."""


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
        tool, subject = split_rule(text)
        return cls(tool=tool, subject=subject)

    def covers_tool(self, tool: str, kind: str) -> bool:
        """Whether the rule is about this tool at all (its subject aside)."""
        alias = KIND_ALIASES.get(self.tool.lower())
        if alias is not None:
            return alias == kind
        return fnmatch.fnmatchcase(tool, TOOL_ALIASES.get(self.tool.lower(), self.tool))

    def matches_text(self, text: str) -> bool:
        """The subject against a raw string (an "always" answer is matched on the whole line)."""
        if self.subject is None:
            return True
        return text == self.subject if self.exact else fnmatch.fnmatchcase(text, self.subject)

    def matches_path(self, rule_path: str) -> bool:
        """The subject against a canonical path (workspace-relative, or absolute outside)."""
        if self.subject is None:
            return True
        if self.exact:
            return rule_path == self.subject
        pattern = path_pattern(self.subject)
        if not pattern:
            return False
        anywhere = "/" not in pattern
        # A directory the pattern names covers its whole tree: test the path and each parent.
        candidate = rule_path
        while candidate and candidate not in ("/", "."):
            if fnmatch.fnmatchcase(candidate, pattern):
                return True
            if anywhere and fnmatch.fnmatchcase(posixpath.basename(candidate), pattern):
                return True
            candidate = posixpath.dirname(candidate)
        return False

    def matches_command(self, command: SimpleCommand) -> bool:
        """The subject against one simple command of a line."""
        if self.subject is None:
            return True
        return any(fnmatch.fnmatchcase(command.text, p) for p in _command_patterns(self.subject))

    def __str__(self) -> str:
        return self.tool if self.subject is None else f"{self.tool}({self.subject})"


def path_pattern(subject: str) -> str:
    """A rule's subject as a path pattern (also the sandbox's reading of deny rules)."""
    pattern = subject.strip()
    if pattern.startswith("//"):
        pattern = pattern[1:]  # Claude Code's spelling of an absolute path
    while pattern.startswith("./"):
        pattern = pattern[2:]
    return pattern.rstrip("/") if pattern != "/" else pattern


def _command_patterns(subject: str) -> tuple[str, ...]:
    pattern = " ".join(subject.split())
    if pattern.endswith(":*"):
        prefix = pattern[:-2].rstrip()
        return (_basename_first(prefix), _basename_first(prefix) + " *")
    return (_basename_first(pattern),)


def _basename_first(pattern: str) -> str:
    """``/usr/bin/rm -rf *`` matches commands named ``rm``, as command names are compared."""
    head, sep, tail = pattern.partition(" ")
    return (posixpath.basename(head) or head) + sep + tail


def lexical_path(path: str) -> str:
    """A path normalised on its text alone (``./a/../b`` → ``b``): how rules see a path when no
    file system is at hand; the pod resolves symlinks through the scoped file system instead."""
    if not path:
        return ""
    norm = posixpath.normpath(path)
    return "" if norm == "." else norm
