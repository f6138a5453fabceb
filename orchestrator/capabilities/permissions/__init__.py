"""Permissions: which tool calls run, ask a person first, or are refused.

:mod:`.policy` decides (pure); :mod:`.rules` is one rule and what it matches; :mod:`.shell`
takes a command line apart into the commands it runs; :mod:`.protected` names the paths whose
change runs code later. Waiting for a person's answer is :mod:`orchestrator.runtime.approvals`'s job.
"""

from __future__ import annotations

from orchestrator.capabilities.permissions.policy import (
    MODE_DEFAULTS,
    WIDENING_MODES,
    Canonical,
    Decision,
    Mode,
    PermissionsConfig,
    Policy,
    Subject,
    ToolKind,
    Verdict,
    subject_of,
)
from orchestrator.capabilities.permissions.protected import protected_names, protected_reason
from orchestrator.capabilities.permissions.rules import Rule, lexical_path
from orchestrator.capabilities.permissions.shell import ParsedCommand, SimpleCommand, parse_command

__all__ = [
    "MODE_DEFAULTS",
    "WIDENING_MODES",
    "Canonical",
    "Decision",
    "Mode",
    "ParsedCommand",
    "PermissionsConfig",
    "Policy",
    "Rule",
    "SimpleCommand",
    "Subject",
    "ToolKind",
    "Verdict",
    "lexical_path",
    "parse_command",
    "protected_names",
    "protected_reason",
    "subject_of",
]
