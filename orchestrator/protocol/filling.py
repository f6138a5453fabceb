"""Filling a protocol model from the runtime's own record of the same thing.

Many replies and events show a runtime object as it is (a job, a stored item, a placement):
their fields have the same names. :func:`to_data` copies those by name, so a field added to
both is shown without another hand-written line, and a renamed one fails loudly (the model
then misses a required field) instead of being copied wrong.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

from pydantic import BaseModel

__all__ = ["to_data"]

T = TypeVar("T")


_NAMES: dict[type[Any], tuple[str, ...]] = {}
"""Each model's field names, worked out once: :func:`to_data` runs for every committed item."""


def _field_names(model: type[Any]) -> tuple[str, ...]:
    known = _NAMES.get(model)
    if known is None:
        known = _NAMES[model] = _names_of(model)
    return known


def _names_of(model: type[Any]) -> tuple[str, ...]:
    if isinstance(model, type) and issubclass(model, BaseModel):
        return tuple(model.model_fields)
    if dataclasses.is_dataclass(model):
        return tuple(field.name for field in dataclasses.fields(model))
    raise TypeError(f"{model.__name__} is neither a pydantic model nor a dataclass")


def to_data(model: type[T], source: object, **given: Any) -> T:
    """A ``model`` (a pydantic model or a dataclass) whose fields are ``source``'s attributes
    of the same names; ``given`` sets the fields ``source`` names otherwise or that are worked
    out (it wins over an attribute). A field ``source`` lacks keeps its default."""
    values = {
        name: getattr(source, name)
        for name in _field_names(model)
        if name not in given and hasattr(source, name)
    }
    return model(**values, **given)
