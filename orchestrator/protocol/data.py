"""The base of every event's data model."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["EventData"]


class EventData(BaseModel):
    """An event's ``data``: a strict model (an unknown field is an error, on both sides).

    Each model builds its validator and serialiser when first used, not at import: a pod
    sends a handful of the kinds of event there are, and every pod process started paid
    for all of them before it listened."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
