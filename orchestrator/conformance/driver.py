"""Running conformance cases against a pod process over its socket.

A :class:`PodProcess` is one pod under test: the command given by the user (placeholders
``{socket}``, ``{base_url}``, ``{workspace}`` filled in), started in its own session with
``ANTHROPIC_BASE_URL`` / ``ANTHROPIC_API_KEY`` pointing at a private
:class:`~orchestrator.conformance.fake_api.FakeAnthropic`. The fake answers from a
:class:`Stimuli` responder: a user text carrying ``[[kit:slow-text:N]]`` gets a slow streamed
reply, ``[[kit:slow-tool:N]]`` a reply calling the slow tool twice, anything else a short
echo. A :class:`PodPool` keeps pods warming in the background and reuses a pod a row left
idle, so a full run takes seconds per stopping row, not per row.

:func:`run_case` drives one :class:`~orchestrator.conformance.cases.Case`: setup, the
method (with a ``get_status`` in the same write as a sync point), checks, settle, one more
``run`` to see the next request on the wire, then the wire checks.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.conformance.cases import Case, Expectation
from orchestrator.conformance.fake_api import FakeAnthropic, RecordedRequest, Reply, Step, ToolCall
from orchestrator.conformance.report import CaseResult
from orchestrator.history import INTERRUPT_NOTE
from states.table import TABLE_STATES

__all__ = [
    "DEFAULT_SLOW_TOOL",
    "KitOptions",
    "PodPool",
    "PodProcess",
    "PodStartError",
    "Recorder",
    "Stimuli",
    "run_case",
    "run_cases",
]

DEFAULT_SLOW_TOOL: dict[str, Any] = {"name": "bash", "input": {"command": "sleep 30"}}
"""The tool call the kit uses to hold a pod in ``executing_tools``."""

PLACEHOLDERS = ("{socket}", "{base_url}", "{workspace}")
REST_STATUSES = frozenset({"idle", "paused", "stopped"})
_SLOW_TEXT = "Conformance stream. " * 30  # 600 characters
_SLOW_CHUNK = 4
_SLOW_DELAY_S = 0.04  # about six seconds of streaming: a wide window, cut short by the kit
_NOTE_PREFIX = "kit-note"


class PodStartError(Exception):
    """The pod under test did not start listening on its socket."""


class Mismatch(Exception):
    """A check failed in a way that makes the rest of the row meaningless."""


@dataclass(frozen=True, slots=True, kw_only=True)
class KitOptions:
    """How to start the pod under test and how patient to be with it."""

    command: tuple[str, ...]
    """The pod's argv, with ``{socket}``, ``{base_url}`` and ``{workspace}`` placeholders."""
    slow_tool: dict[str, Any] = field(default_factory=lambda: dict(DEFAULT_SLOW_TOOL))
    """``{"name": ..., "input": {...}}``: a call the pod runs for long enough to interrupt."""
    timeout_s: float = 10.0
    """How long to wait for any one expected event."""
    startup_timeout_s: float = 30.0
    """How long a pod may take to listen on its socket."""
    warm_pods: int = 2
    """Pods started ahead of need, in the background."""

    def __post_init__(self) -> None:
        if not self.command:
            raise ValueError("the pod command is empty")
        if "{socket}" not in " ".join(self.command):
            raise ValueError("the pod command must contain {socket}")
        name = self.slow_tool.get("name")
        if not isinstance(name, str) or not isinstance(self.slow_tool.get("input", {}), dict):
            raise ValueError('the slow tool is {"name": str, "input": object}')


# -- the fake API's side --------------------------------------------------------------------


class Stimuli:
    """The responder of a pod's fake API: slow answers on request, short echoes otherwise."""

    def __init__(self, slow_tool: dict[str, Any]) -> None:
        self.slow_tool = slow_tool
        self._lock = threading.Lock()
        self._used: set[str] = set()
        self._counter = itertools.count(1)

    def token(self, kind: str) -> str:
        """A fresh marker: ``[[kit:<kind>:N]]``."""
        return f"[[kit:{kind}:{next(self._counter)}]]"

    def respond(self, body: dict[str, Any]) -> Step | None:
        """The step for a request: a marker is honoured once, so a resumed turn ends fast."""
        text = last_user_text_block(body)
        for kind in ("slow-text", "slow-tool"):
            start = text.find(f"[[kit:{kind}:")
            if start < 0:
                continue
            marker = text[start : text.find("]]", start) + 2]
            with self._lock:
                if marker in self._used:
                    return None
                self._used.add(marker)
            if kind == "slow-text":
                return Reply(text=_SLOW_TEXT, chunk_size=_SLOW_CHUNK, delay_s=_SLOW_DELAY_S)
            call = ToolCall(
                name=self.slow_tool["name"], input=dict(self.slow_tool.get("input", {}))
            )
            # Two calls: a pod that runs calls one at a time leaves the second never started.
            return Reply(text="Running the slow tool.", tool_calls=[call, call])
        return None


def last_user_text_block(body: dict[str, Any]) -> str:
    """The last text block of the last user message (where a new input lands)."""
    for message in reversed(body.get("messages") or []):
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        texts = [
            str(b.get("text", ""))
            for b in content or []
            if isinstance(b, dict) and b.get("type") == "text"
        ]
        return texts[-1] if texts else ""
    return ""


def _request_text(request: RecordedRequest) -> str:
    return json.dumps(request.body, ensure_ascii=False) if request.body is not None else ""


def _trailing_user_blocks(request: RecordedRequest) -> list[dict[str, Any]]:
    """The content blocks after the last assistant message, in order (roles merged)."""
    body = request.body if isinstance(request.body, dict) else {}
    blocks: list[dict[str, Any]] = []
    for message in body.get("messages") or []:
        if not isinstance(message, dict):
            continue
        if message.get("role") == "assistant":
            blocks = []
            continue
        content = message.get("content")
        if isinstance(content, str):
            blocks.append({"type": "text", "text": content})
        elif isinstance(content, list):
            blocks.extend(b for b in content if isinstance(b, dict))
    return blocks


# -- the pod process ------------------------------------------------------------------------


class PodProcess:
    """One pod under test, its fake API and its private directories."""

    def __init__(self, options: KitOptions) -> None:
        self.options = options
        self.dir = Path(tempfile.mkdtemp(prefix="pc"))
        self.socket = self.dir / "pod.sock"
        self.workspace = self.dir / "ws"
        self.workspace.mkdir()
        (self.workspace / "README.md").write_text("# Conformance workspace\n")
        self.stimuli = Stimuli(options.slow_tool)
        self.api = FakeAnthropic(responder=self.stimuli.respond).start()
        self.log_path = self.dir / "pod.log"
        values = {
            "{socket}": str(self.socket),
            "{base_url}": self.api.base_url,
            "{workspace}": str(self.workspace),
        }
        self.argv = [_fill(arg, values) for arg in options.command]
        env = dict(os.environ)
        env.update(
            ANTHROPIC_BASE_URL=self.api.base_url,
            ANTHROPIC_API_KEY="fake-key",
            XDG_STATE_HOME=str(self.dir / "state"),
        )
        with open(self.log_path, "wb") as log:
            try:
                self.proc = subprocess.Popen(
                    self.argv,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            except OSError as exc:
                self.api.stop()
                shutil.rmtree(self.dir, ignore_errors=True)
                raise PodStartError(f"cannot start {self.argv[0]!r}: {exc}") from None
        self.ready = False
        self.rows = 0

    def log_tail(self, lines: int = 15) -> str:
        """The last lines the pod printed."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    async def wait_ready(self) -> None:
        """Wait until something accepts connections on the socket."""
        deadline = time.monotonic() + self.options.startup_timeout_s
        while not self.ready:
            code = self.proc.poll()
            if code is not None:
                raise PodStartError(
                    f"the pod exited with code {code} before listening on {self.socket}\n"
                    f"command: {' '.join(self.argv)}\n{self.log_tail()}"
                )
            if self.socket.exists():
                try:
                    _, writer = await asyncio.open_unix_connection(str(self.socket))
                except OSError:
                    pass
                else:
                    writer.close()
                    with contextlib.suppress(Exception):
                        await writer.wait_closed()
                    self.ready = True
                    return
            if time.monotonic() > deadline:
                raise PodStartError(
                    f"the pod did not listen on {self.socket} within "
                    f"{self.options.startup_timeout_s:g} s\n{self.log_tail()}"
                )
            await asyncio.sleep(0.02)

    async def wait_exit(self, timeout: float) -> int | None:
        """The exit code, or None if the pod is still running after ``timeout``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            code = self.proc.poll()
            if code is not None:
                return code
            await asyncio.sleep(0.02)
        return self.proc.poll()

    def stop(self) -> None:
        """Terminate the pod's process group (if alive), stop the fake API, clean up."""
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=3)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=3)
        else:
            # The pod exited on its own; its tools' processes may linger in the group.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        self.api.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


def _fill(arg: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        arg = arg.replace(key, value)
    return arg


class PodPool:
    """Pods warming in the background, and pods a row left idle, ready for the next row."""

    def __init__(self, options: KitOptions) -> None:
        self.options = options
        self._reusable: list[PodProcess] = []
        self._warming: deque[PodProcess] = deque()
        self.started = 0

    def _prime(self) -> None:
        while len(self._warming) < self.options.warm_pods:
            self._warming.append(PodProcess(self.options))
            self.started += 1

    async def take(self) -> PodProcess:
        """A pod at rest in its initial state: a reused one if any, else a fresh one."""
        while self._reusable:
            pod = self._reusable.pop()
            if pod.proc.poll() is None:
                return pod
            pod.stop()
        if not self._warming:
            self._warming.append(PodProcess(self.options))
            self.started += 1
        pod = self._warming.popleft()
        self._prime()
        try:
            await pod.wait_ready()
        except PodStartError:
            pod.stop()
            raise
        return pod

    def give_back(self, pod: PodProcess) -> None:
        """Keep a pod that ended its row idle and healthy for the next row."""
        self._reusable.append(pod)

    def close(self) -> None:
        """Stop every pod the pool holds."""
        for pod in [*self._reusable, *self._warming]:
            pod.stop()
        self._reusable.clear()
        self._warming.clear()


# -- the connection -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Seen:
    """One event received, with when (seconds since the connection opened)."""

    event: str
    data: dict[str, Any]
    at: float


class Recorder:
    """One client connection that records every event in order."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer
        self.events: list[Seen] = []
        self.closed = False
        self.garbage: list[str] = []
        self._changed = asyncio.Condition()
        self._t0 = time.monotonic()
        self._ids = itertools.count(1)
        self._pump = asyncio.create_task(self._read())

    @classmethod
    async def connect(cls, path: Path) -> Recorder:
        """Connect to a pod's socket."""
        reader, writer = await asyncio.open_unix_connection(str(path), limit=64 * 1024 * 1024)
        return cls(reader, writer)

    async def _read(self) -> None:
        try:
            while True:
                line = await self._reader.readline()
                if not line:
                    break
                try:
                    raw = json.loads(line)
                    seen = Seen(str(raw["event"]), dict(raw.get("data") or {}), self._now())
                except (ValueError, KeyError, TypeError):
                    self.garbage.append(line.decode(errors="replace")[:200])
                    continue
                async with self._changed:
                    self.events.append(seen)
                    self._changed.notify_all()
        except (ConnectionError, OSError):
            pass
        finally:
            async with self._changed:
                self.closed = True
                self._changed.notify_all()

    def _now(self) -> float:
        return round(time.monotonic() - self._t0, 3)

    def next_id(self, prefix: str) -> str:
        """A fresh request id."""
        return f"kit-{prefix}-{next(self._ids)}"

    async def send(self, *messages: dict[str, Any]) -> int:
        """Write the messages as JSON lines in one write; returns the event index at send."""
        mark = len(self.events)
        data = b"".join(json.dumps(m).encode() + b"\n" for m in messages)
        try:
            self._writer.write(data)
            await self._writer.drain()
        except (ConnectionError, OSError) as exc:
            raise Mismatch(
                f"the pod closed the connection before the kit could send: {exc}"
            ) from None
        return mark

    async def wait_for(
        self,
        predicate: Callable[[Seen], bool],
        *,
        start: int,
        timeout: float,
        what: str,
    ) -> int:
        """The index of the first event from ``start`` matching ``predicate``."""
        deadline = time.monotonic() + timeout
        async with self._changed:
            while True:
                for index in range(start, len(self.events)):
                    if predicate(self.events[index]):
                        return index
                if self.closed:
                    raise Mismatch(f"the pod closed the connection while the kit waited for {what}")
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise Mismatch(f"timed out after {timeout:g} s waiting for {what}")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), remaining)

    async def wait_closed(self, timeout: float) -> bool:
        """Wait for the pod to close the connection."""
        deadline = time.monotonic() + timeout
        async with self._changed:
            while not self.closed:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), remaining)
        return True

    async def status(self, timeout: float) -> Seen:
        """Ask ``get_status`` and wait for the reply carrying its id."""
        request_id = self.next_id("status")
        mark = await self.send({"method": "get_status", "id": request_id})
        index = await self.wait_for(
            lambda e: e.event == "status" and e.data.get("id") == request_id,
            start=mark,
            timeout=timeout,
            what="the reply to get_status",
        )
        return self.events[index]

    def tail(self, start: int = 0, limit: int = 40) -> list[str]:
        """Compact lines describing events from ``start`` (for failure reports)."""
        lines: list[str] = []
        previous = ""
        for seen in self.events[start:]:
            if seen.event in ("text_delta", "tool_call_args_delta", "thinking_delta"):
                if previous == seen.event:
                    continue
                line = f"{seen.at:7.3f} {seen.event} …"
            elif seen.event == "status":
                line = f"{seen.at:7.3f} status {seen.data.get('status')}/{seen.data.get('state')}"
                if "id" in seen.data:
                    line += f" (reply {seen.data['id']})"
            else:
                detail = json.dumps(seen.data, ensure_ascii=False)
                line = f"{seen.at:7.3f} {seen.event} {detail[:160]}"
            previous = seen.event
            lines.append(line)
        if len(lines) > limit:
            lines = [f"… {len(lines) - limit} earlier events", *lines[-limit:]]
        return lines

    async def close(self) -> None:
        """Close the connection."""
        self._writer.close()
        with contextlib.suppress(Exception):
            await self._writer.wait_closed()
        self._pump.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._pump


# -- one row --------------------------------------------------------------------------------


def _segments_text(data: dict[str, Any]) -> str:
    return json.dumps(data.get("segments", []), ensure_ascii=False)


def _method_message(method: str, request_id: str, note: str) -> dict[str, Any]:
    params: dict[str, Any] = {}
    if method == "run":
        params = {"input": f"Conformance input {note}."}
    elif method == "notify":
        params = {"message": f"Conformance note {note}."}
    elif method == "pod_event":
        params = {"kind": "turn_ended", "pod": "conformance", "message": f"note {note}"}
    message: dict[str, Any] = {"method": method, "id": request_id}
    if params:
        message["params"] = params
    return message


@dataclass(slots=True)
class _Row:
    """The running state of one case."""

    case: Case
    expect: Expectation
    pod: PodProcess
    conn: Recorder
    timeout: float
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    requests_at_start: int = 0
    requests_at_method: int = 0
    method_mark: int = 0
    setup_mark: int = 0
    sync_index: int | None = None
    method_id: str = ""
    note: str = ""
    orphans: list[str] = field(default_factory=list)

    def fail(self, message: str) -> None:
        self.problems.append(message)

    @property
    def events(self) -> list[Seen]:
        return self.conn.events

    def check_or_stop(self) -> None:
        if self.problems:
            raise Mismatch(self.problems.pop())

    def requests(self) -> list[RecordedRequest]:
        return self.pod.api.requests[self.requests_at_start :]


async def _hold(row: _Row) -> None:
    """Bring the pod into the setup's held state: nothing, a slow stream or a slow tool."""
    setup = row.case.setup
    assert setup is not None
    conn, stimuli = row.conn, row.pod.stimuli
    if setup.hold == "idle":
        return
    kind = "slow-text" if setup.hold == "requesting" else "slow-tool"
    marker = stimuli.token(kind)
    mark = await conn.send(
        {"method": "run", "params": {"input": f"Conformance setup {marker}"}, "id": "kit-setup"}
    )
    if setup.hold == "requesting":
        await conn.wait_for(
            lambda e: e.event == "text_delta" or _is_error(e),
            start=mark,
            timeout=row.timeout,
            what="the first text_delta of the slow stream (setup)",
        )
    else:
        await conn.wait_for(
            lambda e: (
                (e.event == "status" and e.data.get("state") == "executing_tools") or _is_error(e)
            ),
            start=mark,
            timeout=row.timeout,
            what="status state=executing_tools after the slow tool call (setup)",
        )
    _raise_on_error(row, mark, "setup")


def _is_error(seen: Seen) -> bool:
    return seen.event == "error"


def _raise_on_error(row: _Row, start: int, phase: str) -> None:
    for seen in row.events[start:]:
        if seen.event == "error":
            raise Mismatch(f"{phase}: the pod answered with an error: {seen.data}")


def _open_calls(events: Sequence[Seen]) -> list[str]:
    calls = [e.data.get("id") for e in events if e.event == "tool_call_done"]
    answered = {e.data.get("id") for e in events if e.event == "tool_result"}
    return [str(c) for c in dict.fromkeys(calls) if c not in answered]


async def _setup(row: _Row) -> list[dict[str, Any]]:
    """Run the setup; returns the lines that must precede the method in the same write."""
    setup = row.case.setup
    assert setup is not None
    conn = row.conn
    await _hold(row)
    if setup.method is None:
        return []
    if setup.pipelined:
        return [{"method": setup.method, "id": "kit-setup-method"}]
    mark = await conn.send({"method": setup.method, "id": "kit-setup-method"})
    state = row.case.row.state
    index = await conn.wait_for(
        lambda e: (
            (e.event == "status" and e.data.get("state") == state)
            or e.event == "run_end"
            or _is_error(e)
        ),
        start=mark,
        timeout=row.timeout,
        what=f"status state={state} after {setup.method} (setup)",
    )
    _raise_on_error(row, mark, "setup")
    if conn.events[index].event == "run_end":
        raise Mismatch(
            f"setup ({setup.describe()}): the turn ended with run_end "
            f"{conn.events[index].data} before the pod reported state {state!r}"
        )
    # Let the turn task's end arrive (run_end) before the row's method goes out.
    await conn.wait_for(
        lambda e: e.event == "run_end", start=mark, timeout=row.timeout, what="run_end (setup)"
    )
    return []


async def _confirm_source(row: _Row) -> None:
    """For a non-pipelined setup, the pod must report the row's source state right now."""
    setup = row.case.setup
    assert setup is not None
    if setup.pipelined:
        return
    seen = await row.conn.status(row.timeout)
    state = row.case.row.state
    if seen.data.get("state") != state:
        raise Mismatch(
            f"setup ({setup.describe()}): expected the pod in {state!r}, "
            f"get_status says {seen.data.get('state')!r}"
        )


async def _send_method(row: _Row, prefix: list[dict[str, Any]]) -> None:
    event = row.case.row.event
    row.method_id = row.conn.next_id(event)
    row.note = f"{_NOTE_PREFIX}-{row.method_id}"
    row.orphans = _open_calls(row.events)
    row.requests_at_method = len(row.pod.api.requests)
    sync_id = row.conn.next_id("sync")
    method = _method_message(event, row.method_id, row.note)
    row.setup_mark = len(row.events)
    mark = await row.conn.send(*prefix, method, {"method": "get_status", "id": sync_id})
    row.method_mark = mark
    settle_stopped = row.expect.settle == "stopped"

    def is_sync(e: Seen) -> bool:
        return e.event == "status" and e.data.get("id") == sync_id

    try:
        row.sync_index = await row.conn.wait_for(
            is_sync, start=mark, timeout=row.timeout, what=f"the reply to get_status after {event}"
        )
    except Mismatch:
        if not (settle_stopped and row.conn.closed):
            raise
        row.sync_index = None  # a stopping pod may close the connection without answering
    if prefix:
        # The method's own effects start after the setup method's status change.
        state = row.case.row.state
        found = next(
            (
                i
                for i in range(
                    mark, row.sync_index if row.sync_index is not None else len(row.events)
                )
                if row.events[i].event == "status"
                and "id" not in row.events[i].data
                and row.events[i].data.get("state") == state
            ),
            None,
        )
        if found is None:
            setup = row.case.setup
            assert setup is not None
            raise Mismatch(
                f"setup ({setup.describe()}): the pod never reported state {state!r} "
                f"after {setup.method}"
            )
        row.method_mark = found + 1


def _window_end(row: _Row) -> int:
    return row.sync_index if row.sync_index is not None else len(row.events)


def _check_reply(row: _Row) -> None:
    expect, method = row.expect, row.case.row.event
    errors = [
        e
        for e in row.events[row.setup_mark : _window_end(row)]
        if e.event == "error" and e.data.get("id") == row.method_id
    ]
    if expect.reply == "error":
        if not errors:
            row.fail(
                f"{method} in {row.case.row.state}: expected error {expect.error_code!r}, "
                "got no error before the next get_status reply"
            )
        elif errors[0].data.get("code") != expect.error_code:
            row.fail(
                f"{method} in {row.case.row.state}: expected error {expect.error_code!r}, "
                f"got {errors[0].data.get('code')!r} ({errors[0].data.get('message')!r})"
            )
    elif expect.reply == "none" and errors:
        row.fail(
            f"{method} in {row.case.row.state}: expected no error, got "
            f"{errors[0].data.get('code')!r} ({errors[0].data.get('message')!r})"
        )


def _check_target(row: _Row) -> None:
    expect, source = row.expect, row.case.row.state
    table_states = set(TABLE_STATES)
    if expect.changes_state:
        changed = next(
            (
                e
                for e in row.events[row.method_mark :]
                if e.event == "status"
                and e.data.get("state") in table_states
                and e.data.get("state") != source
            ),
            None,
        )
        if changed is None:
            row.fail(f"expected a status event with state {expect.target!r}, saw none")
        elif changed.data.get("state") != expect.target:
            row.fail(
                f"expected the state to change to {expect.target!r}, "
                f"the first status after the method says {changed.data.get('state')!r}"
            )
        elif changed.data.get("status") != expect.status_after:
            row.fail(
                f"state {expect.target!r} must be public status {expect.status_after!r}, "
                f"got {changed.data.get('status')!r}"
            )
        return
    if row.sync_index is None:
        return
    sync = row.events[row.sync_index]
    if sync.data.get("state") != source or sync.data.get("status") != expect.status_after:
        row.fail(
            f"the state must stay {source!r} (status {expect.status_after!r}); get_status "
            f"right after the method says {sync.data.get('status')!r}/{sync.data.get('state')!r}"
        )
    setup = row.case.setup
    if expect.quiet and setup is not None and not setup.pipelined:
        noise = [
            e.event
            for e in row.events[row.method_mark : row.sync_index]
            if e.event not in ("error", "alert")
        ]
        if noise:
            row.fail(f"a refused or no-op method must change nothing; the pod sent {noise}")


async def _settle(row: _Row) -> Seen:
    """Wait for the pod to come to rest (interrupting a held stimulus first, if needed)."""
    expect, conn = row.expect, row.conn
    start = row.method_mark
    if expect.kit_interrupt is not None:
        start = await conn.send({"method": expect.kit_interrupt, "id": "kit-settle"})
    if expect.settle == "stopped":
        index = await conn.wait_for(
            lambda e: e.event == "status" and e.data.get("status") == "stopped",
            start=row.setup_mark,
            timeout=row.timeout,
            what="status stopped",
        )
        # Everything the pod says while stopping (run_end, shutdown) precedes the close.
        await conn.wait_closed(row.timeout)
        return row.events[index]
    while True:
        index = await conn.wait_for(
            lambda e: e.event == "status" and e.data.get("status") in REST_STATUSES,
            start=start,
            timeout=row.timeout,
            what=f"the pod to come to rest ({expect.settle})",
        )
        seen = await conn.status(row.timeout)
        if seen.data.get("status") in REST_STATUSES:
            return seen
        # The pod started another turn on its own (a queued note): wait for it too.
        start = index + 1


def _first_after(row: _Row, name: str, start: int) -> int | None:
    return next((i for i in range(start, len(row.events)) if row.events[i].event == name), None)


def _check_settled(row: _Row, rest: Seen) -> None:
    expect = row.expect
    if rest.data.get("state") != expect.settle:
        row.fail(
            f"expected the pod to come to rest in {expect.settle!r}, "
            f"it reports {rest.data.get('state')!r}"
        )
    events = row.events
    start = row.method_mark
    run_end_at = _first_after(row, "run_end", start)
    if expect.run_end is not None:
        if run_end_at is None:
            row.fail(f"expected run_end with result {expect.run_end!r}, saw none")
        elif events[run_end_at].data.get("result") != expect.run_end:
            row.fail(
                f"expected run_end result {expect.run_end!r}, "
                f"got {events[run_end_at].data.get('result')!r}"
            )
    end = run_end_at if run_end_at is not None else len(events)
    turn_ends = [e for e in events[start:end] if e.event == "turn_end"]
    if expect.turn_end and not turn_ends:
        row.fail("expected a turn_end for the turn that ended, saw none")
    if expect.turn_end_forbidden and turn_ends:
        row.fail(f"the turn must stay open (no turn_end), got turn_end {turn_ends[0].data}")
    if expect.turn_start is not None:
        starts = [e for e in events[start:] if e.event == "turn_start"]
        resumed = expect.turn_start == "resumed"
        if not starts:
            row.fail("expected a turn_start, saw none")
        elif bool(starts[0].data.get("resumed", False)) != resumed:
            row.fail(f"expected turn_start resumed={resumed}, got {starts[0].data}")
    if expect.user_message and not any(
        e.event == "user_message" and row.note in _segments_text(e.data) for e in events[start:]
    ):
        row.fail("expected a user_message carrying the run's input, saw none")
    if expect.input_refused and any(
        e.event in ("user_message", "system_note") and row.note in json.dumps(e.data)
        for e in events[start:]
    ):
        row.fail("a refused method's text was committed to history")
    if expect.close_orphans or expect.interrupt_note:
        _check_interrupt_order(row)
    if rest.data.get("status") in ("idle", "stopped"):
        still_open = _open_calls(events)
        if still_open:
            row.fail(f"the pod is at rest with unanswered tool calls {still_open}")
    failures = [
        e.data for e in events[row.setup_mark :] if e.event == "error" and e.data.get("id") is None
    ]
    if failures:
        row.fail(f"a turn failed: {failures[0]}")


def _check_interrupt_order(row: _Row) -> None:
    """Synthetic results for the orphans, then the interrupt note, then the user message."""
    expect, events, start = row.expect, row.events, row.method_mark
    last_result = -1
    if expect.close_orphans:
        if not row.orphans:
            row.notes.append(
                "the pause left no never-started tool calls (the pod starts every call of a "
                "round at once), so no synthetic result was expected"
            )
        for call_id in row.orphans:
            found = next(
                (
                    i
                    for i in range(start, len(events))
                    if events[i].event == "tool_result" and events[i].data.get("id") == call_id
                ),
                None,
            )
            if found is None:
                row.fail(f"expected a synthetic tool_result for never-started call {call_id}")
                continue
            if events[found].data.get("synthetic") is not True:
                row.fail(f"the tool_result closing {call_id} must be synthetic: true")
            last_result = max(last_result, found)
    note_at = -1
    if expect.interrupt_note:
        note_at = next(
            (
                i
                for i in range(start, len(events))
                if events[i].event == "system_note" and events[i].data.get("text") == INTERRUPT_NOTE
            ),
            -1,
        )
        if note_at < 0:
            row.fail(f"expected a system_note {INTERRUPT_NOTE!r}, saw none")
        elif note_at < last_result:
            row.fail("the interrupt note came before the synthetic tool results")
    if expect.user_message:
        user_at = next(
            (
                i
                for i in range(start, len(events))
                if events[i].event == "user_message" and row.note in _segments_text(events[i].data)
            ),
            -1,
        )
        if user_at >= 0 and user_at < max(note_at, last_result):
            row.fail("the user_message came before the synthetic results / interrupt note")
    if expect.end_turn and last_result >= 0:
        turn_end_at = _first_after(row, "turn_end", start)
        if turn_end_at is not None and turn_end_at < last_result:
            row.fail("turn_end came before the synthetic results closing the turn")


async def _next_request(row: _Row, rest: Seen) -> None:
    """One more ``run`` from rest, so the request after the row is seen on the wire."""
    if rest.data.get("status") not in ("idle", "paused"):
        return
    token = f"{_NOTE_PREFIX}-next-{row.conn.next_id('next')}"
    mark = await row.conn.send(
        {"method": "run", "params": {"input": f"Conformance next {token}."}, "id": "kit-next"}
    )
    await row.conn.wait_for(
        lambda e: e.event == "run_end" or (e.event == "error" and e.data.get("id") == "kit-next"),
        start=mark,
        timeout=row.timeout,
        what="run_end of the kit's follow-up run",
    )
    _raise_on_error(row, mark, "follow-up run")
    if not any(token in _request_text(r) for r in row.pod.api.requests[row.requests_at_method :]):
        row.fail("the follow-up run's input never reached the API")
    rest = await _settle_plain(row, mark)
    if rest.data.get("status") != "idle":
        row.fail(f"after the follow-up run the pod must be idle, it is {rest.data.get('state')!r}")


async def _settle_plain(row: _Row, start: int) -> Seen:
    while True:
        index = await row.conn.wait_for(
            lambda e: e.event == "status" and e.data.get("status") in REST_STATUSES,
            start=start,
            timeout=row.timeout,
            what="the pod to come to rest after the follow-up run",
        )
        seen = await row.conn.status(row.timeout)
        if seen.data.get("status") in REST_STATUSES:
            return seen
        start = index + 1


def _check_wire(row: _Row) -> None:
    expect = row.expect
    requests = row.requests()
    for n, request in enumerate(requests):
        if not request.valid:
            row.fail(
                f"request {n + 1} of the row was rejected by the fake API (HTTP "
                f"{request.status}): {request.error}"
            )
    after = row.pod.api.requests[row.requests_at_method :]
    if expect.note_delivered and not any(row.note in _request_text(r) for r in after):
        row.fail("the queued note never reached a later request")
    if expect.input_refused and any(row.note in _request_text(r) for r in after):
        row.fail("a refused method's text reached the API")
    if expect.interrupt_note and after:
        _check_interrupted_request(row, after[0])
    if expect.same_request_again:
        before = row.pod.api.requests[: row.requests_at_method]
        if before and after:
            old, new = before[-1].body, after[0].body
            # Cache breakpoints may move between the two; the conversation may not.
            if not (isinstance(old, dict) and isinstance(new, dict)) or _conversation(
                old.get("messages")
            ) != _conversation(new.get("messages")):
                row.fail("resume must send the interrupted request's messages again")
        else:
            row.fail("resume sent no request")


def _check_interrupted_request(row: _Row, request: RecordedRequest) -> None:
    """Tool results for the orphans, then the interrupt note, then the user's text."""
    blocks = _trailing_user_blocks(request)

    def result_at(call_id: str) -> int:
        return next(
            (
                i
                for i, b in enumerate(blocks)
                if b.get("type") == "tool_result" and b.get("tool_use_id") == call_id
            ),
            -1,
        )

    def text_at(needle: str) -> int:
        return next(
            (
                i
                for i, b in enumerate(blocks)
                if b.get("type") == "text" and needle in str(b.get("text"))
            ),
            -1,
        )

    results = [result_at(call) for call in row.orphans]
    note_at = text_at(INTERRUPT_NOTE)
    user_at = text_at(row.note)
    missing = [call for call, at in zip(row.orphans, results, strict=True) if at < 0]
    if missing:
        row.fail(f"the next request lacks tool_result blocks for {missing}")
    if note_at < 0:
        row.fail("the next request lacks the interrupt note")
    if user_at < 0:
        row.fail("the next request lacks the new user input")
    if note_at >= 0 and (any(at > note_at for at in results) or (0 <= user_at < note_at)):
        row.fail("the next request must hold the tool results, the note, then the input, in order")


async def _finish_stopped(row: _Row) -> None:
    if not any(e.event == "shutdown" for e in row.events[row.setup_mark :]):
        await row.conn.wait_for(
            lambda e: e.event == "shutdown",
            start=row.setup_mark,
            timeout=row.timeout,
            what="the shutdown event",
        )
    if not await row.conn.wait_closed(row.timeout):
        row.fail("the pod kept the connection open after stopping")
    code = await row.pod.wait_exit(row.timeout)
    if code is None:
        row.fail(f"the pod process was still running {row.timeout:g} s after stopping")


async def run_case(case: Case, pool: PodPool, options: KitOptions) -> CaseResult:
    """Run one case against a pod from ``pool``; never raises for a pod's misbehaviour."""
    started = time.monotonic()
    if case.skip_reason is not None or case.expect is None or case.setup is None:
        return CaseResult.skipped(case, case.skip_reason or "not runnable")
    try:
        pod = await pool.take()
    except PodStartError as exc:
        return CaseResult.failed(case, [str(exc)], time.monotonic() - started)
    try:
        conn = await Recorder.connect(pod.socket)
    except OSError as exc:
        pod.stop()
        return CaseResult.failed(
            case, [f"cannot connect to {pod.socket}: {exc}"], time.monotonic() - started
        )
    row = _Row(case=case, expect=case.expect, pod=pod, conn=conn, timeout=options.timeout_s)
    row.requests_at_start = len(pod.api.requests)
    pod.rows += 1
    healthy = False
    try:
        prefix = await _setup(row)
        await _confirm_source(row)
        await _send_method(row, prefix)
        _check_reply(row)
        _check_target(row)
        row.check_or_stop()
        rest = await _settle(row)
        _check_settled(row, rest)
        row.check_or_stop()
        if case.expect.settle == "stopped":
            await _finish_stopped(row)
        else:
            await _next_request(row, rest)
        _check_wire(row)
        healthy = not row.problems and case.expect.settle != "stopped"
    except Mismatch as exc:
        row.problems.append(str(exc))
    except Exception as exc:  # a kit bug must still report the row, not kill the run
        row.problems.append(f"kit error: {type(exc).__name__}: {exc}")
    finally:
        await conn.close()
        if healthy and pod.proc.poll() is None:
            pool.give_back(pod)
        else:
            pod.stop()
    duration = time.monotonic() - started
    if row.problems:
        detail = ["events since the row began:", *conn.tail(0)]
        log = pod.log_tail()
        if log and pod.proc.returncode not in (0, None):
            detail += ["pod output:", log]
        return CaseResult.failed(case, row.problems, duration, notes=row.notes, detail=detail)
    return CaseResult.passed(case, duration, notes=row.notes)


def run_cases(
    cases: Sequence[Case],
    options: KitOptions,
    *,
    on_result: Callable[[CaseResult], None] | None = None,
) -> list[CaseResult]:
    """Run cases in order with one pool, from synchronous code."""

    async def main() -> list[CaseResult]:
        pool = PodPool(options)
        results: list[CaseResult] = []
        try:
            for case in cases:
                result = await run_case(case, pool, options)
                results.append(result)
                if on_result is not None:
                    on_result(result)
        finally:
            pool.close()
        return results

    return asyncio.run(main())


def _conversation(value: Any) -> Any:
    """Messages as the model reads them: ``cache_control`` markers removed."""
    if isinstance(value, dict):
        return {k: _conversation(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_conversation(v) for v in value]
    return value
