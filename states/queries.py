"""What the rest of the pod may ask the machine about its states, by name.

Code outside ``states/`` never spells a state name: it asks here. Each set below is the
machine's own knowledge written once, and ``tests/states/test_queries.py`` checks every one of
them against the transition table (the machine run for every state and event), so a state
added or moved in :mod:`states.lifecycle` cannot leave a stale copy behind.

* :data:`AT_REST`: no task runs; a turn outcome means nothing there.
* :data:`UNLOADABLE`: at rest and not final, so a pod may be unloaded to its session and a
  load starts it the same (:mod:`orchestrator.runtime.unload`).
* :data:`BUSY`: why every other state keeps a pod loaded, in words for people.
* :data:`REWIND_FROM`: where a ``rewind`` is accepted (the runtime checks its target there
  before the machine sees it).
* :data:`COMPACTING` / :data:`REWINDING`: where a compaction or a rewind runs (telemetry
  opens a span for each).
* :data:`TOOLS_RUN`: where a round's tools run, so an MCP server may ask a person for input.
* :func:`running_tools`: a round's calls run, none waiting for a person.
* :func:`awaiting_approval` / :func:`awaiting_input`: a call waits for a person.
* :func:`input_answerable`: where a request for input can be answered.
* :func:`methods_taken`: which protocol methods a state accepts (computed from the machine).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from types import MappingProxyType
from typing import Final

from states.vocabulary import METHOD_EVENTS

__all__ = [
    "AT_REST",
    "BUSY",
    "COMPACTING",
    "REWINDING",
    "REWIND_FROM",
    "TOOLS_RUN",
    "UNLOADABLE",
    "awaiting_approval",
    "awaiting_input",
    "busy_reason",
    "input_answerable",
    "methods_taken",
    "running_tools",
]

_EXECUTING_TOOLS: Final = "executing_tools"
_AWAITING_APPROVAL: Final = "awaiting_approval"
_AWAITING_INPUT: Final = "awaiting_input"

AT_REST: Final[frozenset[str]] = frozenset({"idle", "paused", "stopped"})
"""States in which no task runs: the machine takes no turn outcome there."""

UNLOADABLE: Final[frozenset[str]] = frozenset({"idle", "paused"})
"""States a pod may be unloaded in: at rest, and not final, so loading its session again
starts it in the same state (a paused turn stays open)."""

BUSY: Final[Mapping[str, str]] = MappingProxyType(
    {
        "requesting": "a turn is running",
        _EXECUTING_TOOLS: "a turn is running",
        "summarizing": "a turn is running",
        "awaiting_input": "a turn is running",
        "interrupted": "a turn is running",
        # A call waiting for a person is a turn too, but the person is who it waits for.
        _AWAITING_APPROVAL: "a turn is waiting for an approval",
        # The winding states: a turn task was told to stop and has not ended yet.
        "pausing": "a turn is pausing",
        "cancelling": "a turn is being cancelled",
        "stopping": "the pod is stopping",
        # Final: nothing would load it again the same way (a load starts a pod afresh).
        "stopped": "the pod has stopped",
        # Work between turns that must end whole before the session can be closed.
        "compacting": "a compaction is running",
        "rewinding": "a rewind is running",
    }
)
"""Why a pod in each state that is not :data:`UNLOADABLE` cannot be unloaded, in words for
people (a host names it when it keeps a pod loaded)."""

REWIND_FROM: Final[frozenset[str]] = frozenset({"idle", "paused"})
"""States that take a ``rewind``: between turns (a paused turn is closed when it begins)."""

COMPACTING: Final[frozenset[str]] = frozenset({"compacting", "summarizing"})
"""States in which a compaction runs: between turns, or at a turn's round boundary."""

REWINDING: Final[frozenset[str]] = frozenset({"rewinding"})
"""States in which a rewind runs."""

TOOLS_RUN: Final[frozenset[str]] = frozenset(
    {_EXECUTING_TOOLS, _AWAITING_APPROVAL, _AWAITING_INPUT}
)
"""States in which a round's tool calls run (or wait for a person): the only place a tool of
an MCP server can be running, so the only place its request for input is put to a person."""

_INPUT_ANSWERABLE: Final[frozenset[str]] = frozenset({_AWAITING_INPUT, _AWAITING_APPROVAL})


def busy_reason(state: str) -> str | None:
    """Why a pod in ``state`` cannot be unloaded; None when it is :data:`UNLOADABLE`."""
    if state in UNLOADABLE:
        return None
    return BUSY.get(state, "a turn is running")


def running_tools(state: str | None) -> bool:
    """Whether a round's tool calls run and none of them waits for a person."""
    return state == _EXECUTING_TOOLS


def awaiting_approval(state: str | None) -> bool:
    """Whether a call waits for a person's approval (``approve`` / ``deny`` are taken)."""
    return state == _AWAITING_APPROVAL


def awaiting_input(state: str | None) -> bool:
    """Whether a request for input an MCP server made is what the pod waits for (an
    approval waiting at the same time wins the state: see :func:`awaiting_approval`)."""
    return state == _AWAITING_INPUT


def input_answerable(state: str) -> bool:
    """Whether ``answer_elicitation`` can be taken in ``state`` when a request for input
    waits: where it waits, and beside a waiting approval (which wins the state)."""
    return state in _INPUT_ANSWERABLE


@cache
def methods_taken(state: str) -> frozenset[str]:
    """The protocol methods the machine accepts in ``state`` (the rest it refuses with the
    code of :data:`states.REJECTION_CODES`), found by sending each to a fresh machine.

    A condition the row cannot see (``answer_elicitation`` beside a waiting approval needs a
    request for input) counts as not met.
    """
    # Imported on first use, as ``states`` does: ``python -m states.table`` must run a module
    # nobody imported yet.
    from states.table import transition_row

    return frozenset(event for event in METHOD_EVENTS if transition_row(state, event).allowed)
