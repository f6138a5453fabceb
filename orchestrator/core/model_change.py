"""A change of the model or its settings asked with ``set_model``, as it waits for the next
turn (:mod:`orchestrator.runtime.model_choice` applies it)."""

from __future__ import annotations

from dataclasses import dataclass, replace

__all__ = ["ModelChange"]


@dataclass(frozen=True)
class ModelChange:
    """What ``set_model`` asked for (None: unchanged)."""

    model: str | None = None
    thinking: str | int | None = None
    effort: str | None = None
    """``default`` for the model's own."""

    def merged(self, later: ModelChange) -> ModelChange:
        """This change, then ``later`` on top of it."""
        return replace(
            self,
            model=later.model or self.model,
            thinking=self.thinking if later.thinking is None else later.thinking,
            effort=later.effort or self.effort,
        )

    def described(self) -> dict[str, str]:
        """What changes, in words, for ``status.pending``."""
        out = {"model": self.model, "thinking": self.thinking, "effort": self.effort}
        return {key: str(value) for key, value in out.items() if value is not None}
