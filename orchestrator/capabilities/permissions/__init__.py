"""Permissions: which tool calls run, ask a person first, or are refused.

:mod:`.policy` decides (pure); :mod:`.web` judges ``web_fetch`` by host; :mod:`.rules` is one
rule and what it matches; :mod:`.shell`
takes a command line apart into the commands it runs; :mod:`.protected` names the paths whose
change runs code later; the ``[permissions]`` table and its rule syntax are
:mod:`orchestrator.config.permissions`. Waiting for a
person's answer is :mod:`.approvals`'s job.
"""

from __future__ import annotations

from orchestrator.capabilities.permissions.policy import (
    MODE_DEFAULTS,
    Canonical,
    Decision,
    Policy,
    Subject,
    ToolKind,
    Verdict,
    bash_offered,
    pod_policy,
    subject_of,
)
from orchestrator.capabilities.permissions.protected import protected_names, protected_reason
from orchestrator.capabilities.permissions.rules import Rule, lexical_path
from orchestrator.capabilities.permissions.shell import ParsedCommand, SimpleCommand, parse_command
from orchestrator.config.permissions import Mode

__all__ = [
    "MODE_DEFAULTS",
    "Canonical",
    "Decision",
    "Mode",
    "ParsedCommand",
    "Policy",
    "Rule",
    "SimpleCommand",
    "Subject",
    "ToolKind",
    "Verdict",
    "bash_offered",
    "lexical_path",
    "parse_command",
    "pod_policy",
    "protected_names",
    "protected_reason",
    "subject_of",
]
