"""The pod lifecycle machine and its derived transition table (python-statemachine only)."""

from typing import TYPE_CHECKING, Any

from states.lifecycle import (
    METHOD_EVENTS,
    OUTCOME_EVENTS,
    PUBLIC_STATUS,
    REJECTION_CODES,
    ROUND_EVENTS,
    LifecycleModel,
    PodLifecycle,
    PublicStatus,
    leaf_state,
    public_status,
)

if TYPE_CHECKING:
    from states.table import (
        RecordingModel,
        TransitionRow,
        render_markdown_table,
        transition_table,
    )

# Loaded on first use, so that ``python -m states.table`` runs a module nobody imported yet.
_TABLE_NAMES = frozenset(
    {"RecordingModel", "TransitionRow", "render_markdown_table", "transition_table"}
)


def __getattr__(name: str) -> Any:
    if name in _TABLE_NAMES:
        from states import table

        return getattr(table, name)
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
