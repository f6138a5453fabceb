"""Answering one valid Messages request the way a script step says.

A :class:`~conformance.script.Reply` is sent whole (JSON) or streamed event by event; a
``Fault`` is an HTTP error with the real API's error type; a ``Hang`` sends headers and
then nothing; a ``Drop`` cuts the connection part-way; a ``StreamError`` ends the stream
with an SSE ``error`` event (or is a 529 when the request did not stream).
"""

from __future__ import annotations

import json
from collections.abc import Callable

from conformance.script import Drop, Fault, Hang, Reply, Step, StreamError
from conformance.sse import PlannedReply, SseEvent
from conformance.transport import ClientGone, Handler, error_body

__all__ = ["answer_fault", "answer_step", "model_fault"]

_STATUS_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
_STATUS_MESSAGES = {
    429: "Number of request tokens has exceeded your per-minute rate limit",
    500: "Internal server error",
    529: "Overloaded",
}


def model_fault(fault: Fault, model: str) -> Fault:
    """A fault of one model (``FakeAnthropic.model_faults``) in the real API's words: a 404
    names the model (``model: claude-x``), as the API's ``not_found_error`` for one does."""
    if fault.status == 404 and fault.message is None:
        return Fault(status=404, message=f"model: {model}", retry_after=fault.retry_after)
    return fault


def answer_fault(
    handler: Handler, fault: Fault, *, request_id: str, update: Callable[..., None]
) -> None:
    """An HTTP error with the real API's error type and message for its status."""
    error_type = fault.error_type or _STATUS_ERROR_TYPES.get(fault.status, "api_error")
    message = fault.message or _STATUS_MESSAGES.get(fault.status, f"HTTP {fault.status}")
    extra = {"request-id": request_id}
    if fault.retry_after is not None:
        extra["retry-after"] = f"{fault.retry_after:g}"
    update(status=fault.status, error=message, outcome="fault")
    handler.send_json(fault.status, error_body(error_type, message, request_id), extra)


def answer_step(
    handler: Handler,
    step: Step,
    *,
    stream: bool,
    request_id: str,
    plan: Callable[[Reply], PlannedReply],
    update: Callable[..., None],
) -> None:
    """Answer a valid request the way ``step`` says, through ``handler``.

    ``plan`` fixes the reply's ids and usage (only called for steps that send a reply), and
    ``update`` records the exchange's status, error and outcome as it goes. Raises
    :class:`~conformance.transport.ClientGone` or ``OSError`` when the client leaves, and
    :class:`~conformance.transport.Stopping` when the server stops mid-answer.
    """
    if isinstance(step, Fault):
        answer_fault(handler, step, request_id=request_id, update=update)
        return
    if isinstance(step, Hang):
        if stream:
            handler.start_stream(request_id)
        else:
            handler.send_response(200)
            handler.send_header("content-type", "application/json")
            handler.send_header("content-length", "1000")
            handler.end_headers()
        update(status=200)
        handler.pause(step.seconds)
        update(outcome="hung")
        handler.cut()
        return
    if isinstance(step, StreamError) and not stream:
        update(status=529, error=step.message, outcome="stream_error")
        handler.send_json(
            529,
            error_body(step.error_type, step.message, request_id),
            {"request-id": request_id},
        )
        return
    reply = step if isinstance(step, Reply) else step.reply
    planned = plan(reply)
    if not stream:
        data = json.dumps(planned.message()).encode()
        if isinstance(step, Drop):
            handler.send_response(200)
            handler.send_header("content-type", "application/json")
            handler.send_header("content-length", str(len(data)))
            handler.end_headers()
            update(status=200, outcome="dropped")
            handler.wfile.write(data[: len(data) // 2])
            handler.cut()
            return
        # Recorded before the last write, so a client that has the answer sees it recorded.
        update(status=200, outcome="complete")
        handler.send_json(200, planned.message(), {"request-id": request_id})
        return
    _stream(handler, step, planned, request_id=request_id, update=update)


def _stream(
    handler: Handler,
    step: Step,
    planned: PlannedReply,
    *,
    request_id: str,
    update: Callable[..., None],
) -> None:
    handler.start_stream(request_id)
    update(status=200)
    limit = step.after_events if isinstance(step, Drop | StreamError) else None
    events = list(planned.events())
    for sent, event in enumerate(events):
        if limit is not None and sent >= limit:
            break
        if event.delay_before > 0:
            handler.pause(event.delay_before)
        elif handler.client_gone():
            raise ClientGone
        if limit is None and sent == len(events) - 1:
            # Recorded before the last write, so a client that has the answer sees it.
            update(outcome="complete")
        handler.write_chunk(event.encode())
    if limit is None:
        handler.end_stream()
        return
    # A limit past the last event still ends the exchange the scripted way.
    if isinstance(step, Drop):
        update(outcome="dropped")
        handler.cut()
        return
    assert isinstance(step, StreamError)
    update(error=step.message, outcome="stream_error")
    error = SseEvent("error", error_body(step.error_type, step.message, ""))
    handler.write_chunk(error.encode())
    handler.end_stream()
