"""What a skill's ``allowed-tools`` grants: rules that allow those calls to the end of a turn.

A skill lists the tools it needs in Claude Code's words (``Read``, ``Bash(git status:*)``) or
the pod's (``read_file``, ``bash(git status:*)``); each is mapped through the tools' own
``claude_code_name`` and becomes a :class:`~orchestrator.capabilities.permissions.rules.Rule`.
Only a skill from the user's own folders grants anything, and only until the turn ends
(:meth:`~orchestrator.capabilities.permissions.policy.Policy.grant_for_turn`): deny rules,
``read-only`` and ``plan`` still refuse what they refuse. A workspace's skill grants nothing;
the pod says so once when it starts (:func:`workspace_grant_alert`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from orchestrator.capabilities.permissions.rules import Rule
from orchestrator.config.permissions import split_rule

__all__ = ["turn_rules", "workspace_grant_alert"]


def turn_rules(
    entries: Iterable[str], claude_names: Mapping[str, str]
) -> tuple[list[Rule], list[str]]:
    """The rules ``allowed-tools`` entries stand for, and the entries that are no rule.
    ``claude_names``: pod tool name -> its Claude Code name (the registry's
    ``claude_code_names()``, handed in: the registry imports the ``skill`` tool)."""
    names = {claude.lower(): pod for pod, claude in claude_names.items()}
    rules: list[Rule] = []
    unreadable: list[str] = []
    for entry in entries:
        try:
            tool, subject = split_rule(entry)
        except ValueError:
            unreadable.append(entry)
            continue
        rules.append(Rule(names.get(tool.lower(), tool), subject))
    return rules, unreadable


def workspace_grant_alert(asking: Iterable[tuple[str, str, tuple[str, ...]]]) -> str | None:
    """The start-up alert for workspace skills whose ``allowed-tools`` is ignored, from
    (name, SKILL.md path, tools) of each; None when there is none."""
    listed = [f"{name} ({path}: {', '.join(tools)})" for name, path, tools in asking]
    if not listed:
        return None
    return (
        f"skills from the workspace list allowed-tools, which only your own skills may grant: "
        f"{'; '.join(listed)}. They are ignored (those tools ask or are refused as usual). "
        "To let a skill grant them, keep it in ~/.config/pod/skills/ or ~/.claude/skills/."
    )
