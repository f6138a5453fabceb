"""The pod lifecycle machine; depends on python-statemachine only."""

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

__all__ = [
    "METHOD_EVENTS",
    "OUTCOME_EVENTS",
    "PUBLIC_STATUS",
    "REJECTION_CODES",
    "ROUND_EVENTS",
    "LifecycleModel",
    "PodLifecycle",
    "PublicStatus",
    "leaf_state",
    "public_status",
]
