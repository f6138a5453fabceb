"""Hooks: the user's commands at the points of a turn (``[hooks]``), with Claude Code's
contract (docs/hooks.md). The in-process form of the same events is
:mod:`orchestrator.core.interceptors`."""

from orchestrator.capabilities.hooks.commands import CommandHooks
from orchestrator.capabilities.hooks.config import HookCommand, HookMatcher, HooksConfig
from orchestrator.capabilities.hooks.events import HookContext, HookEvent
from orchestrator.capabilities.hooks.outcome import HookOutput, HookRun, Verdict, decide
from orchestrator.capabilities.hooks.runner import HookRunner

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
