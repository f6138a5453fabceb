"""The request bodies the API adds to the protocol's own params models (which are the bodies
of the other routes): each says its fields in ``/openapi.json``, generated from them."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from orchestrator.protocol import AnswerElicitationParams, RunParams
from orchestrator.protocol.requests import PermissionMode

__all__ = ["ApprovalBody", "ElicitationBody", "RunBody"]


class RunBody(RunParams):
    """``run``'s params; ``text`` is a synonym of ``input``. ``request_id`` is made up (a
    UUID) when not given, and answered."""

    text: str | None = Field(default=None, description="The same as 'input'.")

    @model_validator(mode="before")
    @classmethod
    def _text_is_input(cls, data: Any) -> Any:
        if isinstance(data, dict) and "text" in data:
            if "input" in data:
                raise ValueError("give either 'text' or 'input' (they are the same), not both")
            data = {**data, "input": data["text"]}
            del data["text"]
        return data


class ApprovalBody(BaseModel):
    """``POST …/approvals/{id}``: approve (with a scope, and a mode for a plan) or deny (with
    a message for the model)."""

    model_config = ConfigDict(extra="forbid")

    decision: Literal["approve", "deny"]
    scope: Literal["once", "session"] = "once"
    """``approve`` only: ``session`` also allows calls like this one for the session."""
    mode: PermissionMode | None = None
    """``approve`` of a plan only: the mode to work in once it is approved."""
    message: str = Field(default="", max_length=4000)
    """``deny`` only: what the model is told."""

    def params(self, call_id: str) -> tuple[str, dict[str, Any]]:
        """The protocol method and its params."""
        if self.decision == "approve":
            params: dict[str, Any] = {"id": call_id, "scope": self.scope}
            if self.mode is not None:
                params["mode"] = self.mode
            return "approve", params
        return "deny", {"id": call_id, "message": self.message}


class ElicitationBody(BaseModel):
    """``POST …/elicitations/{id}``: ``answer_elicitation``'s params without ``id``."""

    model_config = ConfigDict(extra="forbid")

    action: Literal["accept", "decline", "cancel"]
    content: dict[str, str | int | float | bool | list[str]] | None = None

    def params(self, input_id: str) -> dict[str, Any]:
        """``answer_elicitation``'s params, checked by its own model."""
        params: dict[str, Any] = {"id": input_id, "action": self.action}
        if self.content is not None:
            params["content"] = self.content
        AnswerElicitationParams.model_validate(params)
        return params
