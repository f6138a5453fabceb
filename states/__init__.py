"""The pod lifecycle machine, its derived transition table, and what others may ask of it.

The names of :mod:`states.vocabulary` and :mod:`states.queries` load with the package; the
machine (python-statemachine) and its table load on first use, so a client that only needs
the method names or a state query does not pay for the machine.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

from states.vocabulary import METHOD_EVENTS, OUTCOME_EVENTS, REJECTION_CODES, ROUND_EVENTS

if TYPE_CHECKING:
    from states.lifecycle import (
        PUBLIC_STATUS,
        LifecycleModel,
        PodLifecycle,
        PublicStatus,
        leaf_state,
        public_status,
    )
    from states.table import (
        RecordingModel,
        TransitionRow,
        render_markdown_table,
        transition_table,
    )

# Loaded on first use: the machine's library is the heavy part, and ``python -m states.table``
# must run a module nobody imported yet.
_LAZY: dict[str, str] = {
    "PUBLIC_STATUS": "states.lifecycle",
    "LifecycleModel": "states.lifecycle",
    "PodLifecycle": "states.lifecycle",
    "PublicStatus": "states.lifecycle",
    "leaf_state": "states.lifecycle",
    "public_status": "states.lifecycle",
    "RecordingModel": "states.table",
    "TransitionRow": "states.table",
    "render_markdown_table": "states.table",
    "transition_table": "states.table",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is not None:
        return getattr(import_module(module), name)
    raise AttributeError(f"module 'states' has no attribute {name!r}")


__all__ = [
    "METHOD_EVENTS",
    "OUTCOME_EVENTS",
    "PUBLIC_STATUS",
    "REJECTION_CODES",
    "ROUND_EVENTS",
    "LifecycleModel",
    "PodLifecycle",
    "PublicStatus",
    "RecordingModel",
    "TransitionRow",
    "leaf_state",
    "public_status",
    "render_markdown_table",
    "transition_table",
]
