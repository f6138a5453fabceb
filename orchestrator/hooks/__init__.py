"""Hooks: the user's commands at the points of a turn (``[hooks]``), with Claude Code's
contract (docs/hooks.md). The in-process form of the same events is
:mod:`orchestrator.interceptors`."""

from orchestrator.hooks.commands import CommandHooks
from orchestrator.hooks.config import HookCommand, HookMatcher, HooksConfig
from orchestrator.hooks.events import HookContext, HookEvent
from orchestrator.hooks.outcome import HookOutput, HookRun, Verdict, decide
from orchestrator.hooks.runner import HookRunner

__all__ = [
    "CommandHooks",
    "HookCommand",
    "HookContext",
    "HookEvent",
    "HookMatcher",
    "HookOutput",
    "HookRun",
    "HookRunner",
    "HooksConfig",
    "Verdict",
    "decide",
]
