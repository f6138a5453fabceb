"""The base of every event's data model."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["EventData"]


class EventData(BaseModel):
    """An event's ``data``: a strict model (an unknown field is an error, on both sides)."""

    model_config = ConfigDict(extra="forbid")
