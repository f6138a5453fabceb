"""A tool's ``timeout_s`` argument: a configured default and a ceiling, stated in its schema.

A longer timeout than the ceiling is not refused but shortened to it, so the schema states the
ceiling rather than the model enforcing it (``bash``'s command timeout, ``job_wait``'s wait).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import Field

__all__ = ["TimeoutCeiling", "timeout_field"]


def timeout_field(what: str) -> Any:
    """The optional, positive ``timeout_s`` field of a tool's arguments; ``what`` it bounds, as
    ``Seconds before the command is killed``."""
    return Field(None, gt=0, description=f"{what}.")


@dataclass(frozen=True, slots=True)
class TimeoutCeiling:
    """A tool's timeout: the default when the model gives none, and the most it may ask for."""

    default_s: float
    """Used when the call gives no ``timeout_s``; never above ``max_s``."""
    max_s: float
    """The ceiling a longer ``timeout_s`` is shortened to."""

    @classmethod
    def of(cls, default_s: float, max_s: float) -> TimeoutCeiling:
        """The ceiling ``max_s`` with its default, lowered to it when above."""
        return cls(default_s=min(default_s, max_s), max_s=max_s)

    def schema(self, what: str) -> dict[str, Any]:
        """The schema override of ``timeout_s`` that states the default and the ceiling."""
        return {
            "timeout_s": {
                "maximum": self.max_s,
                "description": f"{what} (default {self.default_s:g}, at most {self.max_s:g}).",
            }
        }

    def seconds(self, requested: float | None) -> float:
        """The timeout of a call that asked for ``requested`` (None: the default)."""
        return min(self.default_s if requested is None else requested, self.max_s)
