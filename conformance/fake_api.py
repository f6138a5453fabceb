"""A fake Anthropic Messages API: real HTTP and SSE on 127.0.0.1, scripted answers.

This module is the fake's public face and its command line; the parts live beside it:
:mod:`~conformance.script` (the steps), :mod:`~conformance.validation` (the API's request
rules), :mod:`~conformance.sse` (rendering a reply), :mod:`~conformance.answer` (answering
one step), :mod:`~conformance.transport` (HTTP) and :mod:`~conformance.server`
(:class:`FakeAnthropic`).

Point any client at :attr:`FakeAnthropic.base_url` (the official SDKs take it as ``base_url``
or the ``ANTHROPIC_BASE_URL`` environment variable) and it behaves like the real endpoint:

* ``POST /v1/messages`` with ``"stream": true`` answers with Server-Sent Events in the exact
  Anthropic event format (``message_start``, ``ping``, ``content_block_start`` / ``_delta`` /
  ``_stop`` for text, thinking and tool_use blocks, ``message_delta`` with the stop reason and
  usage, ``message_stop``), sent with chunked transfer encoding. Without ``stream`` it answers
  with one JSON message.
* Every request is validated like the real API: an API key header (``x-api-key``, or
  ``Authorization: Bearer`` which SDK 2.x sends), the required fields ``model``,
  ``max_tokens`` and ``messages``, no ``temperature`` / ``top_p`` / ``top_k`` (rejected under
  the API version the SDK sends), the conversation rules of :func:`orchestrator.core.validator.
  validate_wire`, and the signatures of thinking blocks sent back. A violation is answered
  with HTTP 400 ``{"type": "error", "error": {"type": "invalid_request_error", "message":
  "messages.N: ..."}}``, the index counted after same-role messages are merged.
* Every request is recorded (:attr:`FakeAnthropic.requests`): headers, parsed body, whether
  it was valid and how the answer ended. Token counts and model lookups are recorded apart
  (:attr:`FakeAnthropic.lookups`).
* The context rules of the real API: a prompt cache with breakpoints, the 20-block
  lookback, a per-model minimum and TTLs (:mod:`~conformance.cache`), usage reported with
  cache reads and writes, a per-model context window (``prompt is too long: N tokens > M
  maximum``), ``POST /v1/messages/count_tokens`` and ``GET /v1/models[/{id}]``
  (:mod:`~conformance.models`). Tokens are counted by one documented rule
  (:func:`count_input_tokens`, :mod:`~conformance.tokens`).

Answers come from a **script**: a list of steps, each answering one valid request, in order:
:class:`Reply`, :class:`Fault`, :class:`Drop`, :class:`StreamError` and :class:`Hang` (see
:mod:`conformance.script`).

When the script is empty a ``responder`` callable (request body → step or ``None``) is asked;
failing that the default reply echoes the last user message: ``"ok: <first 40 chars>"``.
Invalid requests never consume a step.

Use from sync or async tests (the server runs in its own threads)::

    with FakeAnthropic([Fault(529), Reply(text="hello")]) as api:
        client = anthropic.AsyncAnthropic(api_key="test", base_url=api.base_url)
        ...
        assert len(api.requests) == 2

Or standalone, for pods written in any language; the script file holds the JSON form of the
steps (see :func:`step_from_json`)::

    python -m conformance.fake_api --port 8765 --script script.json

    [{"type": "fault", "status": 429, "retry_after": 1},
     {"type": "reply", "text": "Reading it.", "tool_calls": [{"name": "read", "input": {}}]},
     {"type": "reply", "text": "Done."}]

Ids are unique per server: messages ``msg_fake_0001``, tool calls ``toolu_fake_0001``,
requests ``req_fake_0001`` (also sent as the ``request-id`` header). A thinking signature is
derived from the thinking text, so a thinking block sent back altered is rejected, as the
real API does.

Extended thinking follows the real API's rules (:mod:`conformance.thinking`): a reply thinks
(``Reply.thinking``, ``Reply.redacted``) only when the request turns thinking on; the
``thinking``, ``output_config.effort`` and ``tool_choice`` parameters are checked against the
model's capabilities (the default models include an adaptive-only ``claude-opus-5``,
``claude-sonnet-4-6`` taking both, ``claude-sonnet-4-5`` taking a budget, and
``claude-3-5-haiku`` without thinking); the latest assistant message must carry back the
thinking it was issued, unchanged and in place, and a continued tool loop must start with it,
each refusal in the API's words. ``thinking_profile=True`` (``--thinking-profile``) makes every
reply to a request with thinking on think and hold a ``redacted_thinking`` block, so a whole
suite runs with thinking on.

Server tools (:mod:`conformance.web`): a request may declare ``web_search_*`` / ``web_fetch_*``
tools (checked against the model's ``server_tools``); a reply's :class:`ServerCall` s then
become ``server_tool_use`` blocks with their results (``encrypted_content`` the fake issued and
checks on the way back), its text cites them, ``stop_reason: "pause_turn"`` pauses the loop
(the continuation is the same conversation with that content last), a pending call is answered
at the start of the next response, and usage counts ``server_tool_use.web_search_requests``.
``server_tools_profile=True`` (``--server-tools-profile``) makes every reply search
(:mod:`conformance.web_profile`).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from conformance.cache import ManualClock
from conformance.models import DEFAULT_MODELS, ModelSpec, load_models
from conformance.script import (
    DEFAULT_ECHO_CHARS,
    Drop,
    Fault,
    Hang,
    Reply,
    Responder,
    Script,
    ScriptError,
    ServerCall,
    Step,
    StreamError,
    ToolCall,
    fake_encrypted,
    fake_signature,
    issued_encrypted,
    load_script,
    step_from_json,
)
from conformance.server import FakeAnthropic, Outcome, RecordedRequest
from conformance.tokens import count_block_tokens, count_input_tokens

__all__ = [
    "DEFAULT_ECHO_CHARS",
    "DEFAULT_MODELS",
    "Drop",
    "FakeAnthropic",
    "Fault",
    "Hang",
    "ManualClock",
    "ModelSpec",
    "Outcome",
    "RecordedRequest",
    "Reply",
    "Responder",
    "Script",
    "ScriptError",
    "ServerCall",
    "Step",
    "StreamError",
    "ToolCall",
    "count_block_tokens",
    "count_input_tokens",
    "fake_encrypted",
    "fake_signature",
    "issued_encrypted",
    "load_script",
    "main",
    "step_from_json",
]


# -- standalone -----------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """Run the fake API until interrupted, printing its base URL on the first line."""
    parser = argparse.ArgumentParser(
        prog="python -m conformance.fake_api",
        description="A fake Anthropic Messages API on 127.0.0.1 for conformance tests.",
    )
    parser.add_argument("--port", type=int, default=0, help="port to bind (0: any free port)")
    parser.add_argument("--script", type=Path, help="JSON file: a list of steps")
    parser.add_argument(
        "--models",
        type=Path,
        help="JSON file: a list of models (ModelSpec fields) instead of the default ones",
    )
    parser.add_argument(
        "--thinking-profile",
        action="store_true",
        help="every reply to a request with thinking on thinks, with a redacted block too",
    )
    parser.add_argument(
        "--server-tools-profile",
        action="store_true",
        help="every reply to a request declaring web search searches, pause_turn included",
    )
    parser.add_argument(
        "--no-signature-check",
        action="store_true",
        help="accept thinking blocks whatever their signature",
    )
    args = parser.parse_args(argv)
    try:
        script = load_script(args.script) if args.script else []
    except (OSError, ValueError) as err:
        print(f"fake_api: cannot load script: {err}", file=sys.stderr)
        return 2
    try:
        models = load_models(args.models) if args.models else None
    except (OSError, ValueError) as err:
        print(f"fake_api: cannot load models: {err}", file=sys.stderr)
        return 2
    api = FakeAnthropic(
        script,
        port=args.port,
        check_signatures=not args.no_signature_check,
        models=models,
        thinking_profile=args.thinking_profile,
        server_tools_profile=args.server_tools_profile,
    )
    with api:
        print(api.base_url, flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
