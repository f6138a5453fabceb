"""Hooks: the user's commands at the points of a turn (``[hooks]``), with Claude Code's
contract (docs/hooks.md). The in-process form of the same events, and the events themselves,
are :mod:`orchestrator.core.interceptors`; :mod:`.chain` asks both in order; the ``[hooks]``
table is :mod:`orchestrator.config.hooks`."""

from orchestrator.capabilities.hooks.commands import CommandHooks
from orchestrator.capabilities.hooks.events import HookContext
from orchestrator.capabilities.hooks.outcome import HookOutput, HookRun, Verdict, decide
from orchestrator.capabilities.hooks.runner import HookRunner
from orchestrator.core.interceptors import HookEvent

__all__ = [
    "CommandHooks",
    "HookContext",
    "HookEvent",
    "HookOutput",
    "HookRun",
    "HookRunner",
    "Verdict",
    "decide",
]
