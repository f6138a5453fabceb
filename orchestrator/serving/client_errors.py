"""What a pod client raises: :class:`ClientError` for a pod it cannot reach or a connection that
broke, and a :class:`PodRequestError` for a method the pod refused, one class per protocol
error code (docs/protocol.md, "Error codes"; docs/sdk.md).

A program catches the refusal it can handle by its class (``except NotRunning``), or any
refusal (``except PodRequestError``, whose ``code`` is the protocol's word), or anything the
client could not do (``except ClientError``). The message keeps the pod's own words, after
``the pod refused: <code>:``.
"""

from __future__ import annotations

from typing import ClassVar

from orchestrator.errors import PodRuntimeError

__all__ = [
    "ERRORS_BY_CODE",
    "AlreadyRunning",
    "ClientError",
    "Duplicate",
    "Forbidden",
    "InternalFailure",
    "InvalidRequest",
    "NotAwaitingApproval",
    "NotAwaitingInput",
    "NotFound",
    "NotPaused",
    "NotRunning",
    "PodRequestError",
    "ProviderFailed",
    "QueueFull",
    "SessionWriteFailed",
    "ToolFailed",
    "Unauthorized",
    "request_error",
]


class ClientError(PodRuntimeError):
    """The pod cannot be reached, the connection broke, or a request was refused."""


class PodRequestError(ClientError):
    """The pod refused a method (an ``error`` event carrying its id, or an HTTP 4xx): ``code``
    is the protocol's error code, the message the pod's reason. Its subclasses are the codes."""

    code: ClassVar[str] = "error"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(f"the pod refused: {code or self.code}: {message}")
        self.reason = message
        """The pod's own words, without the code."""
        if code is not None:
            self.code = code  # type: ignore[misc]  # a code this client has no class for


class AlreadyRunning(PodRequestError):
    """``already_running``: a turn is alive (or the pod stopped); wait for its ``run_end``."""

    code = "already_running"


class NotRunning(PodRequestError):
    """``not_running``: nothing to pause or cancel (the pod is idle), or the pod is stopping."""

    code = "not_running"


class NotPaused(PodRequestError):
    """``not_paused``: ``resume`` when the pod is not paused."""

    code = "not_paused"


class InvalidRequest(PodRequestError):
    """``invalid_request``: the method's params were refused; the message names the field."""

    code = "invalid_request"


class ProviderFailed(PodRequestError):
    """``provider_error``: the model provider failed; the turn ended ``errored``."""

    code = "provider_error"


class ToolFailed(PodRequestError):
    """``tool_error``: a tool failed in a way that ended the turn."""

    code = "tool_error"


class SessionWriteFailed(PodRequestError):
    """``session_write``: the pod could not write its session file (see its log)."""

    code = "session_write"


class QueueFull(PodRequestError):
    """``queue_full``: this client read too slowly and was disconnected; connect again."""

    code = "queue_full"


class NotAwaitingApproval(PodRequestError):
    """``not_awaiting_approval``: no tool call waits for approval now."""

    code = "not_awaiting_approval"


class NotAwaitingInput(PodRequestError):
    """``not_awaiting_input``: no request for input waits now."""

    code = "not_awaiting_input"


class InternalFailure(PodRequestError):
    """``internal``: a bug in the pod; its log says more."""

    code = "internal"


class Forbidden(PodRequestError):
    """``forbidden``: the pod refuses this connection (another user, a sandboxed process)."""

    code = "forbidden"


class Duplicate(PodRequestError):
    """``duplicate``: a ``run`` whose ``request_id`` the session holds already (not run again)."""

    code = "duplicate"


class Unauthorized(PodRequestError):
    """``unauthorized`` (HTTP 401): no token, or the wrong one; read it from ``_http.json``."""

    code = "unauthorized"


class NotFound(PodRequestError):
    """``not_found`` (HTTP 404): no pod of that name on that server, or no such method."""

    code = "not_found"


ERRORS_BY_CODE: dict[str, type[PodRequestError]] = {
    cls.code: cls
    for cls in (
        AlreadyRunning,
        NotRunning,
        NotPaused,
        InvalidRequest,
        ProviderFailed,
        ToolFailed,
        SessionWriteFailed,
        QueueFull,
        NotAwaitingApproval,
        NotAwaitingInput,
        InternalFailure,
        Forbidden,
        Duplicate,
        Unauthorized,
        NotFound,
    )
}
"""The class of each error code (the protocol's, and the HTTP API's ``unauthorized`` and
``not_found``)."""


def request_error(code: str, message: str) -> PodRequestError:
    """The exception for a refusal with this code (the base class for a code it does not know:
    a newer pod's)."""
    cls = ERRORS_BY_CODE.get(code)
    return cls(message) if cls is not None else PodRequestError(message, code=code)
