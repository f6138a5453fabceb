"""The fake Messages API server: records every request, validates it, answers from a script.

:class:`FakeAnthropic` serves ``POST /v1/messages`` on 127.0.0.1 (streaming and not). Each
request is recorded (:class:`RecordedRequest`), checked by
:func:`~conformance.validation.validate_request`, and a valid one takes the next step of the
script (:mod:`conformance.script`), rendered by :mod:`conformance.sse` and written through
:mod:`conformance.transport`.
"""

from __future__ import annotations

import contextlib
import copy
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Literal, TypeAlias

from conformance.answer import answer_fault, answer_step, model_fault
from conformance.cache import Breakpoint, CacheUsage, PromptCache, cache_breakpoints
from conformance.lookups import Route, lookup, route_of
from conformance.models import DEFAULT_MODELS, ModelSpec, spec_for
from conformance.script import (
    Fault,
    Reply,
    Responder,
    Step,
    echo_reply,
)
from conformance.sse import PlannedReply, plan_reply
from conformance.thinking import (
    ISSUED_LIMIT,
    IssuedThinking,
    check_latest_assistant,
    check_no_cache_control,
    check_parameters,
    thinking_on,
)
from conformance.tokens import PromptBlock, prompt_blocks
from conformance.transport import ClientGone, Handler, HttpServer, Stopping, error_body
from conformance.validation import Rejected, check_context_window, validate_request
from conformance.web import check_server_tools, plan_server_blocks
from conformance.web_profile import PROFILE_PAUSE, read_web_request, with_searches
from orchestrator.core.validator import merge_same_role

__all__ = ["FakeAnthropic", "Outcome", "RecordedRequest"]

Outcome: TypeAlias = Literal[
    "pending", "complete", "rejected", "fault", "dropped", "stream_error", "hung", "client_gone"
]


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordedRequest:
    """One request the server received, and how it was answered."""

    request_id: str
    method: str
    path: str
    headers: dict[str, str]
    """Header names lower-cased."""
    body: Any
    """The parsed JSON body, or ``None`` if it was not JSON."""
    valid: bool
    """Whether the request passed validation."""
    error: str | None = None
    """The message of the error response, if the server sent one."""
    status: int = 0
    """The HTTP status sent (0 before the headers went out)."""
    outcome: Outcome = "pending"
    """How the exchange ended; ``client_gone`` means the client closed the connection first."""
    usage: dict[str, int] | None = None
    """The token counts the reply reported (prompt-cache accounting included), if it started."""
    received_s: float = 0.0
    """When the request's body was read (``time.perf_counter``, this process's clock)."""
    answered_s: float | None = None
    """When the fake was done with it (its answer written, or the client gone); None before.
    ``answered_s - received_s`` is the fake's own time, which benchmarks subtract."""


@dataclass(slots=True)
class _Record:
    request_id: str
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    valid: bool = True
    error: str | None = None
    status: int = 0
    outcome: Outcome = "pending"
    usage: dict[str, int] | None = None
    received_s: float = 0.0
    answered_s: float | None = None

    def snapshot(self) -> RecordedRequest:
        return RecordedRequest(
            request_id=self.request_id,
            method=self.method,
            path=self.path,
            headers=dict(self.headers),
            body=copy.deepcopy(self.body),
            valid=self.valid,
            error=self.error,
            status=self.status,
            outcome=self.outcome,
            usage=dict(self.usage) if self.usage is not None else None,
            received_s=self.received_s,
            answered_s=self.answered_s,
        )


def _usage_counts(usage: CacheUsage) -> dict[str, int]:
    return {
        "input_tokens": usage.input_tokens,
        "cache_creation_input_tokens": usage.cache_creation_input_tokens,
        "cache_read_input_tokens": usage.cache_read_input_tokens,
    }


class FakeAnthropic:
    """A scripted Anthropic Messages API on 127.0.0.1; see the module docstring.

    ``port=0`` picks a free port. ``responder`` answers when the script is empty.
    ``check_signatures`` rejects thinking blocks whose signature this fake did not issue.
    ``models`` are the models the Models API lists (:data:`~conformance.models.
    DEFAULT_MODELS` unless given), with the limits Messages requests for them get. Set
    :attr:`models_fault` to make every Models API request fail that way. ``clock`` (seconds,
    monotonic) times the prompt cache's entries; pass a :class:`~conformance.cache.
    ManualClock` to let them expire in a test. ``issued_limit`` bounds how many tool call ids
    and thinking blocks the fake remembers to match sent-back thinking to its response.
    """

    def __init__(
        self,
        script: Iterable[Step] = (),
        *,
        responder: Responder | None = None,
        port: int = 0,
        check_signatures: bool = True,
        models: Iterable[ModelSpec] | None = None,
        clock: Callable[[], float] = time.monotonic,
        thinking_profile: bool = False,
        issued_limit: int = ISSUED_LIMIT,
        server_tools_profile: bool = False,
    ) -> None:
        self._queue: deque[Step] = deque(script)
        self.responder = responder
        self.check_signatures = check_signatures
        self.thinking_profile = thinking_profile
        """Every reply to a request with thinking on thinks, and holds a redacted block."""
        self.server_tools_profile = server_tools_profile
        """Every reply to a request declaring web search searches, pause_turn included
        (:mod:`conformance.web_profile`)."""
        self.issued = IssuedThinking(issued_limit)
        """The thinking blocks each response issued, by tool call id and by block (bounded:
        ``issued_limit`` keys, least recently used out first)."""
        self.models: dict[str, ModelSpec] = {
            spec.id: spec for spec in (DEFAULT_MODELS if models is None else models)
        }
        self.models_fault: Fault | None = None
        """When set, the Models API answers every request with this fault (for fallbacks)."""
        self.model_faults: dict[str, Fault] = {}
        """Messages requests for these models are answered with their fault instead of a
        script step (``{"claude-opus-5": Fault(529)}``: one model overloaded, the others
        answering; ``Fault(404)``: a model the key cannot use). Checked after the request's
        validation, so an invalid request is still refused as one."""
        self.cache = PromptCache(clock)
        """The prompt cache's entries (``len(api.cache)``, ``api.cache.clear()``)."""
        self._port = port
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._records: list[_Record] = []
        self._lookups: list[_Record] = []
        self._counters = {"msg": 0, "toolu": 0, "req": 0}
        self._connections: set[socket.socket] = set()
        self._stopping = threading.Event()
        self._server: HttpServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> FakeAnthropic:
        """Bind and serve in a background thread; returns ``self``."""
        if self._server is not None:
            return self
        self._stopping.clear()
        self._server = HttpServer(
            self._port, answer=self._handle, track=self._track, stopping=self._stopping
        )
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"fake-anthropic:{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close every open connection (streams in flight end abruptly)."""
        server, self._server = self._server, None
        if server is None:
            return
        self._stopping.set()
        server.shutdown()
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeAnthropic:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    async def __aenter__(self) -> FakeAnthropic:
        return self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The bound port (raises if the server is not running)."""
        if self._server is None:
            raise RuntimeError("the fake API is not running; call start() first")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>``, the value for an SDK's ``base_url``."""
        return f"http://127.0.0.1:{self.port}"

    # -- script and records -----------------------------------------------------------------

    def push(self, *steps: Step) -> None:
        """Append steps to the script; each answers one future valid request."""
        with self._lock:
            self._queue.extend(steps)

    @property
    def pending(self) -> int:
        """How many scripted steps are still unused."""
        with self._lock:
            return len(self._queue)

    def reset(self) -> None:
        """Forget recorded requests and unused steps (ids keep counting, so stay unique)."""
        with self._lock:
            self._queue.clear()
            self._records.clear()
            self._lookups.clear()

    @property
    def requests(self) -> list[RecordedRequest]:
        """Copies of every Messages request received so far (any POST but a count), oldest first."""
        with self._lock:
            return [r.snapshot() for r in self._records]

    @property
    def lookups(self) -> list[RecordedRequest]:
        """Copies of the other requests (token counts, model lookups, any GET), oldest first."""
        with self._lock:
            return [r.snapshot() for r in self._lookups]

    def wait_until(
        self, predicate: Callable[[list[RecordedRequest]], bool], timeout: float = 5.0
    ) -> list[RecordedRequest]:
        """Block until ``predicate(requests)`` holds; raises ``TimeoutError`` after ``timeout``.

        From async code call it through ``asyncio.to_thread`` unless the client is already done.
        """
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                snapshot = [r.snapshot() for r in self._records]
                if predicate(snapshot):
                    return snapshot
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"condition not met within {timeout} s: {snapshot!r}")
                self._changed.wait(remaining)

    # -- internals --------------------------------------------------------------------------

    def _track(self, connection: socket.socket, add: bool) -> None:
        with self._lock:
            if add:
                self._connections.add(connection)
            else:
                self._connections.discard(connection)

    def _next_id(self, kind: str) -> str:
        with self._lock:
            self._counters[kind] += 1
            return f"{kind}_fake_{self._counters[kind]:04d}"

    def _update(self, record: _Record, **changes: Any) -> None:
        with self._changed:
            for name, value in changes.items():
                setattr(record, name, value)
            self._changed.notify_all()

    def _next_step(self, body: dict[str, Any]) -> Step:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        try:
            step = self.responder(body) if self.responder is not None else None
        except Exception as err:
            # A broken responder is a bug in the test; say so in the response, visibly.
            return Fault(status=500, message=f"fake API responder failed: {err!r}")
        if step is None:
            step = echo_reply(body)
        return step

    def _handle(self, handler: Handler) -> None:
        raw = handler.read_body()
        received = time.perf_counter()
        request_id = self._next_id("req")
        headers = {name.lower(): value for name, value in handler.headers.items()}
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        path, _, query = handler.path.partition("?")
        path = path.rstrip("/")
        route = route_of(handler.command, path)
        record = _Record(
            request_id, handler.command, handler.path, headers, body, received_s=received
        )
        try:
            self._answer(handler, record, route, path, query, headers, body)
        finally:
            self._update(record, answered_s=time.perf_counter())

    def _answer(
        self,
        handler: Handler,
        record: _Record,
        route: Route | None,
        path: str,
        query: str,
        headers: dict[str, str],
        body: Any,
    ) -> None:
        request_id = record.request_id
        # Messages requests (and stray POSTs) in one list, lookups in another, so that a
        # client's model lookups and token counts do not shift the requests tests index.
        messages = route == "messages" or (route is None and handler.command == "POST")
        log = self._records if messages else self._lookups
        with self._changed:
            log.append(record)
            self._changed.notify_all()
        try:
            if route is None:
                raise Rejected(404, "not_found_error", f"Not found: {handler.path}")
            if route in ("models", "model") and self.models_fault is not None:
                answer_fault(
                    handler,
                    self.models_fault,
                    request_id=request_id,
                    update=lambda **changes: self._update(record, **changes),
                )
                return
            if route != "messages":
                payload = lookup(
                    route,
                    path,
                    query,
                    headers,
                    body,
                    models=self.models,
                    check_signatures=self.check_signatures,
                )
                self._update(record, status=200, outcome="complete")
                handler.send_json(200, payload, {"request-id": request_id})
                return
            validate_request(headers, body, check_signatures=self.check_signatures)
            spec = spec_for(self.models, body["model"])
            check_parameters(body, headers, accepts=spec.thinking, efforts=spec.efforts)
            check_server_tools(body.get("tools"), spec.server_tools)
            check_no_cache_control(body["messages"])
            merged = merge_same_role(body["messages"])
            with self._lock:  # the lookup refreshes what it finds (least recently used)
                check_latest_assistant(merged, self.issued, on=thinking_on(body))
            prompt = prompt_blocks(body)
            points = cache_breakpoints(prompt, body.get("cache_control"))
            check_context_window(sum(block.tokens for block in prompt), spec.context_window)
            fault = self.model_faults.get(body["model"])
            if fault is not None:
                answer_fault(
                    handler,
                    model_fault(fault, body["model"]),
                    request_id=request_id,
                    update=lambda **changes: self._update(record, **changes),
                )
                return
        except Rejected as rejected:
            self._update(
                record,
                valid=False,
                error=rejected.message,
                status=rejected.status,
                outcome="rejected",
            )
            handler.send_json(
                rejected.status,
                error_body(rejected.error_type, rejected.message, request_id),
                {"request-id": request_id},
            )
            return
        self._messages(handler, record, body, spec, prompt, points)

    def _messages(
        self,
        handler: Handler,
        record: _Record,
        body: dict[str, Any],
        spec: ModelSpec,
        prompt: list[PromptBlock],
        points: list[Breakpoint],
    ) -> None:
        web = read_web_request(body)
        searching = self.server_tools_profile and "web_search" in web.declared
        if searching and not web.continuation:
            step: Step = PROFILE_PAUSE  # uses no script step: the continuation takes it
        else:
            step = self._next_step(body)
            step = with_searches(step) if searching else step

        def update(**changes: Any) -> None:
            self._update(record, **changes)

        def plan(reply: Reply) -> PlannedReply:
            # Accounted only when a reply starts: a fault or a hang caches nothing.
            usage = self.cache.account(
                body["model"], prompt, points, min_tokens=spec.min_cacheable_tokens
            )
            update(usage=_usage_counts(usage))
            planned = plan_reply(
                reply,
                model=body["model"],
                usage=usage,
                next_id=self._next_id,
                # A continued server loop goes on from its content: it does not think anew.
                thinking=None if web.continuation else body.get("thinking"),
                profile=self.thinking_profile,
                web=plan_server_blocks(reply, declared=web.declared, unresolved=web.unresolved),
            )
            with self._lock:
                self.issued.record(web.prior_thinking + planned.blocks)
            return planned

        try:
            answer_step(
                handler,
                step,
                stream=bool(body.get("stream")),
                request_id=record.request_id,
                plan=plan,
                update=update,
            )
        except (ClientGone, OSError):
            self._update(record, outcome="client_gone")
            handler.close_connection = True
        except Stopping:
            handler.cut()
