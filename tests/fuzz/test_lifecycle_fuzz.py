"""Stateful fuzzing of a real pod: any interleaving of methods, waits and crashes stays valid.

A hypothesis ``RuleBasedStateMachine`` drives one in-process pod on a real Unix socket through
its own private event loop. The scripted provider's responder makes random but valid replies
(text streamed in small delayed chunks, 0–3 ``read_file`` / ``glob`` / ``bash sleep`` / MCP
``record`` / MCP ``ask_record`` calls, occasional stream / rejected / overloaded errors).
``ask_record``'s server asks for input during the call (``elicitation/create``, a form with one
required string), so the pod waits in ``awaiting_input`` until a client answers. Each bash and
MCP call appends its id to an executions log (``ask_record`` once it has its answer), so a
command that runs twice is caught. Rules send ``run`` (sometimes with an
``@README.md`` ref), ``pause``, ``resume``, ``cancel``, ``notify``, ``rewind`` (of the
conversation, to a random prompt), ``fork``, ``get_history`` and ``answer_elicitation`` (accept
with a fitting form, decline, cancel, a form the schema refuses, an id nobody waits for), bursts
of 2-4 methods in one write (a turn task interrupted before it starts must still end),
connect and drop extra clients, wait for the pod to reach a point (next ``text_delta``,
``executing_tools``, ``elicitation_request``, ``run_end``, a nap), and "crash" it (the fsync'd session file is copied
at an arbitrary moment, the pod is shut down, a fresh pod continues from the copy). Some
replies delegate with ``task``: each is a child pod, a ``pod serve`` process of its own that
answers from a short script.

After every step:

* ``get_status`` is one of the four statuses and equals the last ``status`` event broadcast;
* every request the provider received is wire-valid;
* history ``seq`` runs 1..N without gaps, each ``get_history`` extends the previous one, and
  the session file holds exactly what ``get_history`` reports (h1 ≤ file ≤ h2);
* an idle pod holds no unanswered tool call and its history plus a new user message is
  wire-valid; a paused one is wire-valid once repaired the way ``run`` repairs it;
* no ``internal`` error ever; every upward ``errored`` pod_event matches a provider error
  (``run_end: errored``), never a pause;
* no command ran twice (crash included: a started command is closed as crashed, never re-run),
  and a burst never leaves the pod pausing, cancelling or stopping;
* no background job (``bash`` with ``background: true``, polled and killed with the job
  tools) outlives its pod;
* ``status.elicitations`` lists exactly the requests for input announced
  (``elicitation_request``) and not yet resolved, and none waits at rest (idle or paused, never
  ``awaiting_input``); each request is announced once and gets exactly one
  ``elicitation_resolved``: the answer the fuzz gave, or ``withdrawn`` only after an interrupt
  (a ``pausing``, ``cancelling`` or ``stopping`` status since it was announced), shutdown and
  crash included; a form the schema refuses is an ``invalid_request`` and the request still
  waits; an answered call's result says what the server got;
* a crash while a request waits restores a paused pod with that call closed by the pod (it
  started, so it is never sent again), and the asking tool never runs twice;
* one child per ``task`` call, never two (one ``child`` record per call, one session per
  record, one prompt per child session), every child's history wire-valid, no child left
  once its parent idles, and no child process alive once its parent stopped.

Some replies are malformed the way a misbehaving model or proxy makes them: one ``tool_use`` id
twice (and again in later replies), a lone surrogate in text and tool input, a tool name of 200
characters. Every invariant above must hold through them.

Every reply may draw the API's own tools (web search and fetch, run by the scripted provider as
the API runs them): a server loop that stops with ``pause_turn`` (sometimes before running its
last call), searches and fetches with results or an error result, cited text, and a server call
left open beside client calls (the mixed case); the server tool blocks sent back are counted (a
run without any fails). Every invariant above holds through them: the pod continues a pause at
once, and a pause, cancel, crash or new message inside a server loop leaves it wire-valid.

The default profile is short (CI); ``POD_FUZZ_STEPS=10000`` runs at least that many steps and
writes a summary to ``bench/results/fuzz.json``. A thinking profile runs the same machine with
extended thinking on: every reply thinks (a signed block and a redacted one), the scripted
provider refuses a request whose thinking came back changed, the validator applies the
thinking rules, and the thinking blocks sent back are counted (a run without any fails).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import re
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from orchestrator.adapters.providers.base import ProviderRequest
from orchestrator.adapters.providers.scripted_web import ScriptedCitation, ScriptedServerCall
from orchestrator.adapters.session import load_session
from orchestrator.core.history import UserMessage, item_from_json, item_to_json
from orchestrator.core.repair import close_orphans, interrupt_note, pending_tool_calls
from orchestrator.core.segments import TextSegment
from orchestrator.core.validator import validate_wire
from orchestrator.core.wire import to_wire
from orchestrator.serving.client import PodClient, PodEvent
from tests.e2e.harness import RunningPod, ScriptedReply, ScriptedToolCall, running_pod
from tests.mcp.hostile_server import config as hostile_server_config

STATUSES = frozenset({"idle", "running", "paused", "stopped"})
SERVER_BLOCKS = frozenset({"server_tool_use", "web_search_tool_result", "web_fetch_tool_result"})
ROOT = Path(__file__).resolve().parents[2]

STATS: dict[str, int] = {}


def _reset_stats() -> None:
    STATS.clear()
    STATS.update(
        steps=0,
        examples=0,
        runs_accepted=0,
        run_end_finished=0,
        run_end_paused=0,
        run_end_cancelled=0,
        run_end_errored=0,
        run_end_limit_reached=0,
        pauses_accepted=0,
        cancels_accepted=0,
        resumes_accepted=0,
        notifies_accepted=0,
        restarts=0,
        restarts_paused=0,
        requests_validated=0,
        items_checked=0,
        history_checks=0,
        upward_errored=0,
        bursts=0,
        mode_switches=0,
        budget_changes=0,
        compacts_accepted=0,
        compactions=0,
        executions=0,
        executed_twice=0,
        lock_ups=0,
        lost=0,
        malformed_replies=0,
        thinking_sent_back=0,
        server_calls=0,
        pause_turns=0,
        mixed_replies=0,
        server_blocks_sent_back=0,
        rewinds_accepted=0,
        forks=0,
        tasks_called=0,
        jobs_started=0,
        orphan_jobs=0,
        children_seen=0,
        children_twice=0,
        orphan_children=0,
        denied_ran=0,
        hook_records=0,
        asks_called=0,
        ask_executions=0,
        elicitations_asked=0,
        elicitations_accept=0,
        elicitations_decline=0,
        elicitations_cancel=0,
        elicitations_withdrawn=0,
        answers_refused=0,
        answers_checked=0,
        crashes_awaiting_input=0,
    )


_reset_stats()

_ID_COUNTER = [0]


def _todo_call(rng: random.Random) -> ScriptedToolCall:
    """A ``todo_write`` of 0-4 items (now and then two in progress: an error result that
    changes nothing)."""
    STATS["todo_writes"] = STATS.get("todo_writes", 0) + 1
    statuses = ["pending", "completed", "in_progress" if rng.random() < 0.9 else "pending"]
    todos = [
        {"content": f"step {n} {rng.choice(['δ', '🙂', 'x'])}", "status": rng.choice(statuses)}
        for n in range(rng.randint(0, 4))
    ]
    working = [t for t in todos if t["status"] == "in_progress"]
    for extra in working[1 if rng.random() < 0.9 else 2 :]:
        extra["status"] = "pending"
    return ScriptedToolCall(name="todo_write", input={"todos": todos}, id=_fresh_id())


def _fresh_id(prefix: str = "toolu_fz") -> str:
    # Unique across pods of one process: the scripted provider's own counter restarts with
    # every pod, which collides after a restart (see test_scripted_ids_collide_after_restart).
    _ID_COUNTER[0] += 1
    return f"{prefix}_{os.getpid()}_{_ID_COUNTER[0]:07d}"


JOB_MARKER = "fuzz-job-tick"
"""Printed by every background job the fuzz starts: a process with it must not outlive its
pod."""

CHILD_REPLIES: list[dict[str, Any]] = [
    {
        # Children inherit their parent's thinking; like the API, the scripted provider
        # thinks only when the request turns it on (the thinking profile).
        "thinking": "the child looks around first",
        "text": "child looks",
        "tool_calls": [{"name": "glob", "input": {"pattern": "*"}}],
        "chunk_size": 4,
        "chunk_delay_s": 0.01,
    },
    {
        "thinking": "the child has what it needs",
        "text": "child done " + "." * 120,
        "chunk_size": 3,
        "chunk_delay_s": 0.02,
    },
]
"""What every child pod answers: a glob round, then an answer that streams for a while (long
enough to be paused or cancelled mid-stream)."""


def _job_processes() -> list[int]:
    """Live processes of the fuzz's background jobs (their command line names the marker)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if JOB_MARKER.encode() in cmdline and b"pytest" not in cmdline:
            found.append(int(entry))
    return found


def write_child_script(root: Path) -> Path:
    """The children's script file, beside the fuzz's workspace."""
    path = root / "child-script.json"
    if not path.exists():
        path.write_text(json.dumps({"replies": CHILD_REPLIES}))
    return path


FUZZ_MCP_SERVER = hostile_server_config()
"""An MCP server whose ``record`` tool logs executions like the fuzz's bash commands, and whose
``ask_record`` tool asks for input (``[mcp] elicitation = "ask"``, the default) before it does."""

ASK_TOOL = "mcp__fz__ask_record"
ASK_PREFIX = "toolu_fzask"
"""The call ids of ``ask_record`` calls (its request's message names them)."""
ASK_MESSAGE = re.compile(r"^ask (\S+): ")

INTERRUPTING = frozenset({"pausing", "cancelling", "stopping"})
"""States an interrupt passes through: a request for input is withdrawn only after one."""

INVALID_ANSWERS: list[dict[str, Any]] = [
    {},
    {"answer": 7},
    {"answer": None},
    {"answer": ["a"]},
    {"answer": "fine", "extra": "no such field"},
]
"""Contents ``ask_record``'s form refuses (its one field is a required string)."""


DENY_MARKER = "FUZZ-DENY"


def fuzz_hooks(root: Path) -> dict[str, Any]:
    """The hooks profile's ``[hooks]``: each takes a moment (so pauses, cancels and crashes
    land while one runs), the PreToolUse one blocks marked commands, the others add context
    or let things go on."""
    guard = root / "guard.sh"
    guard.write_text(
        "#!/bin/bash\n"
        "event=$(cat)\n"
        "sleep 0.$((RANDOM % 15))\n"
        f"case \"$event\" in *{DENY_MARKER}*) echo 'marked: blocked' >&2; exit 2 ;; esac\n"
    )
    guard.chmod(0o755)

    def one(command: str, matcher: str = "") -> list[dict[str, Any]]:
        return [{"matcher": matcher, "hooks": [{"command": command, "timeout": 20}]}]

    return {
        "PreToolUse": one(str(guard), matcher="bash"),
        "PostToolUse": one(
            'cat >/dev/null; echo \'{"hookSpecificOutput": {"additionalContext": "ok"}}\'',
            matcher="Bash|mcp__.*",
        ),
        "UserPromptSubmit": one("cat >/dev/null; echo 'a note from a hook'"),
        "Stop": one("cat >/dev/null"),
    }


class RandomResponder:
    """Random but valid scripted replies; tool loops end after a few rounds."""

    def __init__(self, rng: random.Random, executions: Path, *, thinking: bool = False) -> None:
        self.rng = rng
        self.executions = executions
        self.thinking = thinking
        self.tasks = True
        """Some replies delegate with ``task`` (a child pod: a process of its own)."""
        self.denials = False
        """Some commands carry :data:`DENY_MARKER`, which the hooks profile's PreToolUse hook
        blocks: their ids go to ``denied`` and must never reach the executions log."""
        self.denied: set[str] = set()
        self.force_ask = False
        """The next reply calls ``ask_record`` (set by the ``run_asking`` rule)."""
        self.web = True
        """Replies draw the API's own tools: searches, fetches, ``pause_turn``, the mixed
        case (see :meth:`_searching`)."""
        """Every reply thinks (signed) and carries a redacted block (the thinking profile)."""

    def __call__(self, request: ProviderRequest) -> ScriptedReply:
        reply = self._reply(request)
        if not self.thinking:
            return reply
        thought = f"thinking {self.rng.randrange(10**6)}: " + "why " * self.rng.randint(0, 8)
        return reply.model_copy(
            update={"thinking": thought, "redacted_thinking": [f"opaque-{self.rng.random()}"]}
        )

    def _reply(self, request: ProviderRequest) -> ScriptedReply:
        rng = self.rng
        # Rounds since the last user text: keep tool loops short so turns end.
        rounds = 0
        for message in reversed(request.messages):
            if message["role"] == "assistant":
                rounds += 1
                continue
            if any(b.get("type") == "text" for b in message["content"]):
                break
        if self.force_ask:
            self.force_ask = False
            return self._asking_reply()
        roll = rng.random()
        if roll < 0.08:
            return ScriptedReply(
                text="partial " * rng.randint(0, 6),
                chunk_size=rng.randint(2, 8),
                chunk_delay_s=rng.uniform(0.0, 0.01),
                error="injected failure",
                error_kind=rng.choice(["stream", "rejected", "overloaded"]),
                error_after_chunks=rng.randint(0, 4),
            )
        if roll < 0.13:
            return self._malformed()
        words = ["alpha", "beta", "gamma", "δέλτα", "🙂", "\n", "  ", "code()", "x" * 7]
        text = "".join(rng.choice(words) for _ in range(rng.randint(0, 12)))
        calls: list[ScriptedToolCall] = []
        if rounds < 3:
            for _ in range(rng.choice([0, 0, 1, 1, 2, 3])):
                kind = rng.choice(["read_file", "glob", "bash", "bash", "mcp", "ask"])
                if self.tasks and rng.random() < 0.2:
                    kind = "task"
                elif rng.random() < 0.25:
                    kind = "ask"  # besides its share above: requests for input are the point
                elif rng.random() < 0.15:
                    kind = rng.choice(["job", "job", "job_output", "job_kill"])
                if kind == "job":
                    # A background job: it outlives pauses and turns, never the pod.
                    STATS["jobs_started"] += 1
                    args = {
                        "command": f"for i in 1 2 3 4 5 6; do echo {JOB_MARKER} $i; sleep 0.5;"
                        " done",
                        "background": True,
                    }
                    calls.append(ScriptedToolCall(name="bash", input=args, id=_fresh_id()))
                elif kind in ("job_output", "job_kill"):
                    job = f"j{rng.randint(1, 3)}"  # may not exist: a clear error result
                    calls.append(ScriptedToolCall(name=kind, input={"id": job}, id=_fresh_id()))
                elif kind == "task":
                    STATS["tasks_called"] += 1
                    call_id = _fresh_id()
                    args = {"prompt": f"child work for {call_id}", "name": "fz"}
                    calls.append(ScriptedToolCall(name="task", input=args, id=call_id))
                elif kind == "read_file":
                    args: dict[str, Any] = {"path": rng.choice(["README.md", "src/app.py"])}
                    calls.append(ScriptedToolCall(name=kind, input=args, id=_fresh_id()))
                elif kind == "glob":
                    args = {"pattern": rng.choice(["*", "**/*.py"])}
                    calls.append(ScriptedToolCall(name=kind, input=args, id=_fresh_id()))
                    calls.append(ScriptedToolCall(name=kind, input=args, id=_fresh_id()))
                elif kind == "mcp":
                    # The MCP server logs the call id the same way: a remote call must not be
                    # sent twice either.
                    call_id = _fresh_id()
                    args = {
                        "call_id": call_id,
                        "path": str(self.executions),
                        "seconds": round(rng.uniform(0.05, 0.3), 2),
                    }
                    calls.append(ScriptedToolCall(name="mcp__fz__record", input=args, id=call_id))
                elif kind == "ask":
                    # The MCP server asks for input during the call, then logs the call id as
                    # ``record`` does: a call run twice is caught, a withdrawn one too.
                    STATS["asks_called"] += 1
                    call_id = _fresh_id(ASK_PREFIX)
                    args = {"call_id": call_id, "path": str(self.executions)}
                    calls.append(ScriptedToolCall(name=ASK_TOOL, input=args, id=call_id))
                else:
                    # Each command appends its call id to a log outside the workspace: that log
                    # counts executions, so a command that ran twice is caught.
                    call_id = _fresh_id()
                    args = {
                        "command": f"echo go; echo {call_id} >> {self.executions}; "
                        f"sleep {rng.uniform(0.05, 0.3):.2f}"
                    }
                    if self.denials and rng.random() < 0.3:
                        args["command"] += f" # {DENY_MARKER}"
                        self.denied.add(call_id)
                    calls.append(ScriptedToolCall(name=kind, input=args, id=call_id))
        if rounds < 3 and rng.random() < 0.2:
            calls.append(_todo_call(rng))  # the todo list: written at any step, checked at rest
        if not calls and not text.strip():
            text = "done"
        reply = ScriptedReply(
            text=text,
            tool_calls=calls,
            chunk_size=rng.randint(2, 10),
            chunk_delay_s=rng.uniform(0.002, 0.02),
        )
        return self._searching(reply, rounds) if self.web else reply

    def _searching(self, reply: ScriptedReply, rounds: int) -> ScriptedReply:
        """The reply with the API's own tools drawn in: a server loop that pauses
        (``pause_turn``, sometimes before running its last call), searches and fetches with
        results or an error before the text, cited text, and beside client calls a server call
        left open (the mixed case: its result opens the next reply)."""
        rng = self.rng

        def call(result: str = "results") -> ScriptedServerCall:
            STATS["server_calls"] += 1
            name = rng.choice(["web_search", "web_search", "web_fetch"])
            given = {"query": f"fuzz {rng.randrange(10**4)}"}
            if name == "web_fetch":
                given = {"url": f"https://example.com/{rng.randrange(100)}"}
            error = rng.choice(["unavailable", "max_uses_exceeded", "too_many_requests"])
            return ScriptedServerCall.model_validate(
                {
                    "name": name,
                    "input": given,
                    "id": _fresh_id("srvtoolu_fz"),
                    "result": result,
                    "error_code": error,
                }
            )

        roll = rng.random()
        if roll < 0.25 and rounds < 3:
            STATS["pause_turns"] += 1
            calls = [call(rng.choice(["results", "results", "error"]))]
            if rng.random() < 0.3:
                calls.append(call("none"))  # paused before the API ran it
            text = reply.text if rng.random() < 0.5 else ""
            return reply.model_copy(
                update={
                    "text": text,
                    "tool_calls": [],
                    "server_calls": calls,
                    "stop_reason": "pause_turn",
                }
            )
        if roll < 0.6:
            calls = [call(rng.choice(["results", "results", "results", "error"]))]
            if reply.tool_calls and rng.random() < 0.5:
                STATS["mixed_replies"] += 1
                calls.append(call("none"))
            cited = [ScriptedCitation(url="https://example.com/", title="Example", cited_text="x")]
            return reply.model_copy(
                update={"server_calls": calls, "citations": cited if reply.text.strip() else []}
            )
        return reply

    def _asking_reply(self) -> ScriptedReply:
        """A reply that calls ``ask_record`` (twice, sometimes: two requests wait at once)."""
        calls = []
        for _ in range(self.rng.choice([1, 1, 2])):
            STATS["asks_called"] += 1
            call_id = _fresh_id(ASK_PREFIX)
            args = {"call_id": call_id, "path": str(self.executions)}
            calls.append(ScriptedToolCall(name=ASK_TOOL, input=args, id=call_id))
        return ScriptedReply(
            text="let me ask",
            tool_calls=calls,
            chunk_size=self.rng.randint(2, 10),
            chunk_delay_s=self.rng.uniform(0.002, 0.02),
        )

    def _malformed(self) -> ScriptedReply:
        """A reply the API would never send back: it must not break the session (issue 27)."""
        STATS["malformed_replies"] += 1
        read = {"path": "README.md"}
        call_id = _fresh_id()
        bash = {"command": f"echo {call_id} >> {self.executions}; echo '\udc80'"}
        calls = [
            # One id twice in the reply, and again in every malformed reply after it.
            ScriptedToolCall(name="read_file", input=read, id="toolu_fz_dup"),
            ScriptedToolCall(name="glob", input={"pattern": "*\ud800"}, id="toolu_fz_dup"),
            ScriptedToolCall(name="n" * 200, input={"command": "never runs"}, id=_fresh_id()),
            ScriptedToolCall(name="bash", input=bash, id=call_id),
        ]
        self.rng.shuffle(calls)
        return ScriptedReply(
            text="a lone \ud83d surrogate",
            tool_calls=calls,
            chunk_size=self.rng.randint(2, 10),
            chunk_delay_s=self.rng.uniform(0.002, 0.02),
        )


class LineClient:
    """A raw protocol client read only by the caller, so events and replies keep their order.

    ``PodClient`` reads in a background task, which can run ahead of a reply; the observer
    needs to know exactly which broadcasts came before a ``get_status`` reply.
    """

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.pending: list[PodEvent] = []

    @classmethod
    async def connect(cls, path: Path) -> LineClient:
        reader, writer = await asyncio.open_unix_connection(str(path), limit=64 * 1024 * 1024)
        return cls(reader, writer)

    async def _read(self) -> PodEvent | None:
        line = await self.reader.readline()
        if not line:
            return None
        raw = json.loads(line)
        return PodEvent(raw["event"], raw.get("data") or {})

    async def request(
        self, method: str, params: dict[str, Any] | None = None
    ) -> tuple[PodEvent, list[PodEvent]]:
        """The direct reply, and every broadcast that came before it, in order."""
        request_id = _fresh_id("o")
        line = {"method": method, "id": request_id, **({"params": params} if params else {})}
        self.writer.write(json.dumps(line).encode() + b"\n")
        await self.writer.drain()
        before, self.pending = self.pending, []
        while True:
            got = await self._read()
            assert got is not None, "the pod closed the observer's connection"
            if got.data.get("id") == request_id:
                return got, before
            before.append(got)

    async def next_event(self, timeout: float) -> PodEvent | None:
        return await asyncio.wait_for(self._read(), timeout)

    async def rest(self) -> list[PodEvent]:
        """Everything until the pod closes the connection."""
        out: list[PodEvent] = []
        while (got := await self._read()) is not None:
            out.append(got)
        return out

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(Exception):
            await self.writer.wait_closed()


class ParentListener:
    """A tiny Unix-socket listener standing in for a parent pod: records ``pod_event`` lines."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.events: list[dict[str, Any]] = []
        self._server: asyncio.AbstractServer | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_unix_server(self._serve, path=str(self.path))

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while line := await reader.readline():
                message = json.loads(line)
                assert message["method"] == "pod_event", message
                self.events.append(message["params"])
        finally:
            writer.close()

    def kinds(self, kind: str) -> int:
        return sum(1 for e in self.events if e["kind"] == kind)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()


def _history_valid_after(items: list[dict[str, Any]], *, paused: bool) -> list[Any]:
    """Violations of the request the next ``run`` would build (repairs applied as ``run`` does)."""
    parsed = [item_from_json(i) for i in items]
    extra: list[Any] = []
    if paused:
        extra += close_orphans(parsed)
        extra.append(interrupt_note())
    extra.append(UserMessage(segments=[TextSegment(text="next")], text="next"))
    return validate_wire(to_wire(parsed + extra))


class PodFuzz(RuleBasedStateMachine):
    """One real pod per example, driven over its socket."""

    thinking = False
    """Run with extended thinking on: every reply thinks, and every request must carry the
    thinking it was given back unchanged (the scripted provider refuses it otherwise)."""
    hooks = False
    """Run with hooks on every event that can hold a turn up (:func:`fuzz_hooks`)."""

    def __init__(self) -> None:
        super().__init__()
        STATS["examples"] += 1
        self.loop = asyncio.new_event_loop()
        self.root = Path(tempfile.mkdtemp(prefix="pf"))
        self.ws = self.root / "ws"
        (self.ws / "src").mkdir(parents=True)
        (self.ws / "README.md").write_text("# Fuzz\n\nA tiny project.\n")
        (self.ws / "src" / "app.py").write_text("def main():\n    return 42\n")
        self.rng = random.Random(0)
        self.executions = self.root / "executions.log"
        self.responder = RandomResponder(self.rng, self.executions, thinking=self.thinking)
        self.responder.denials = self.hooks
        self.generation = 0
        self.stack: contextlib.AsyncExitStack | None = None
        self.pod: RunningPod | None = None
        self.driver: PodClient | None = None
        self.obs: LineClient | None = None
        self.extras: list[PodClient] = []
        self.log: list[PodEvent] = []
        self.last_status: tuple[str, str] | None = None
        self.prev_items: list[dict[str, Any]] = []
        self.status: str = "idle"
        self.validated = 0
        self.counted_executions = 0
        self.run_ends_errored = 0
        self.child_pids: dict[str, int] = {}
        self.trace: list[str] = []
        """What the fuzz did, for failure messages (hypothesis's replays of a timing-dependent
        failure seldom fail again, so its own listing of the steps is often lost)."""
        self.asking: dict[str, dict[str, Any]] = {}
        """Requests for input announced and not resolved yet, oldest first: their call id and
        whether an interrupt (a pausing, cancelling or stopping status) came since."""
        self.requests_seen: set[str] = set()
        self.answered: dict[str, str] = {}
        """The answer the fuzz gave each request (its ``elicitation_resolved`` must say it)."""
        self.expected_results: dict[str, tuple[str, int]] = {}
        """What the result of an answered ``ask_record`` call says, by call id, until checked,
        and :attr:`interrupts` when it was answered."""
        self.interrupts = 0
        """Interrupts seen (pausing, cancelling, stopping statuses): a call answered before one
        may still be stopped by it (its result is then the pod's)."""
        self.parent = ParentListener(self.root / "parent.sock")
        self.session_path = self.root / "s0.jsonl"
        self._go(self.parent.start())
        self._go(self._start(self.session_path, continue_=False))

    # -- plumbing -------------------------------------------------------------------------

    def _go(self, coro: Any, timeout: float = 30.0) -> Any:
        self.trace.append(getattr(coro, "__qualname__", "?").removeprefix("PodFuzz."))
        try:
            return self.loop.run_until_complete(asyncio.wait_for(coro, timeout))
        except (AssertionError, ConnectionError) as exc:
            if self.pod is not None and self.pod.task.done():
                # A closed connection says little; how the pod itself ended says what broke.
                raise AssertionError(f"{exc}; {self._pod_fate()}") from exc
            raise

    async def _start(self, session: Path, *, continue_: bool) -> None:
        self.generation += 1
        sock_dir = self.root / f"g{self.generation}"
        sock_dir.mkdir()
        self.stack = contextlib.AsyncExitStack()
        self.pod = await self.stack.enter_async_context(
            running_pod(
                self.ws,
                sock_dir,
                continue_=continue_,
                allow_bash=True,
                parent_socket=self.parent.path,
                session=session,
                bash_timeout_s=10.0,
                # Small enough that long examples compact on their own, too.
                context_window=12_000,
                mcp={"servers": {"fz": FUZZ_MCP_SERVER}},
                thinking="adaptive" if self.thinking else "off",
                # Rewinds here are of the conversation: the files' checkpoints are tested on
                # their own (a crash copies the session file, not its checkpoint store).
                checkpoints=False,
                subpods={"child_script": str(write_child_script(self.root))},
                hooks=fuzz_hooks(self.root) if self.hooks else {},
            )
        )
        self.pod.provider.responder = self.responder
        self.session_path = session
        self.validated = 0
        self.driver = await self.pod.client()
        self.obs = await LineClient.connect(self.pod.socket)
        reply, _ = await self.obs.request("get_status")
        self.last_status = (reply.data["status"], reply.data["state"])
        self.status = reply.data["status"]

    def _drain(self, client: PodClient) -> list[PodEvent]:
        out: list[PodEvent] = []
        queue: asyncio.Queue[PodEvent | None] = client._queue
        while not queue.empty():
            got = queue.get_nowait()
            if got is not None:
                out.append(got)
        return out

    def _absorb(self, events: list[PodEvent]) -> None:
        for e in events:
            self.log.append(e)
            if e.event == "status" and "id" not in e.data:
                self.last_status = (e.data["status"], e.data["state"])
            elif e.event == "run_end":
                result = e.data["result"]
                STATS[f"run_end_{result}"] += 1
                if result == "errored":
                    self.run_ends_errored += 1
                    # The turn failed because the provider did: the error says so.
                    errors = [x for x in self.log[-40:] if x.event == "error"]
                    assert errors and errors[-1].data["code"] == "provider_error", errors
            elif e.event == "compaction":
                STATS["compactions"] += 1
            elif e.event == "child" and e.data["state"] not in ("queued", "starting", "exited"):
                self._note_child(e.data)
            elif e.event == "error":
                assert e.data["code"] != "internal", e.data
                assert "invalid request" not in e.data["message"], e.data
            elif e.event == "elicitation_request":
                self._note_request(e.data)
            elif e.event == "elicitation_resolved":
                self._note_resolved(e.data)
            if e.event == "status" and "id" not in e.data and e.data["state"] in INTERRUPTING:
                self.interrupts += 1
                for waiting in self.asking.values():
                    waiting["interrupted"] = True

    def _note_request(self, data: dict[str, Any]) -> None:
        """A request for input: one of ``ask_record``'s, announced once."""
        STATS["elicitations_asked"] += 1
        assert data["id"] not in self.requests_seen, f"announced twice: {data}"
        self.requests_seen.add(data["id"])
        match = ASK_MESSAGE.match(data["message"])
        self.asking[data["id"]] = {"call": match[1] if match else "", "interrupted": False}
        assert match is not None and match[1].startswith(ASK_PREFIX), data
        assert data["server"] == "fz" and data["tool"] == ASK_TOOL, data
        assert data["mode"] == "form" and data["pod"] is None, data
        assert data["schema"]["required"] == ["answer"], data

    def _note_resolved(self, data: dict[str, Any]) -> None:
        """The end of a request: exactly one, with the answer given, or withdrawn by an
        interrupt."""
        input_id, action = data["id"], data["action"]
        assert input_id in self.asking, f"elicitation_resolved {action} for {input_id}, which " + (
            "was resolved already" if input_id in self.requests_seen else "was never announced"
        )
        waiting = self.asking.pop(input_id)
        STATS[f"elicitations_{action}"] += 1
        answered = self.answered.pop(input_id, None)
        if action == "withdrawn":
            assert waiting["interrupted"], (
                f"request {input_id} withdrawn without an interrupt: {self._recent()}"
            )
            return
        assert action == answered, (input_id, action, answered)

    def _note_child(self, data: dict[str, Any]) -> None:
        """Remember a live child's process, to check it is gone once its parent stopped."""
        from orchestrator.config.paths import pod_info_path

        if data["name"] in self.child_pids:
            return
        with contextlib.suppress(OSError, ValueError, KeyError):
            info = json.loads(pod_info_path(Path(data["socket"])).read_text())
            self.child_pids[data["name"]] = int(info["pid"])
            STATS["children_seen"] += 1

    def _check_tree(self, session: Path) -> None:
        """One child per task call, never two; each child's history is wire-valid."""
        records = []
        for line in session.read_text().splitlines()[1:]:
            try:
                record = json.loads(line)
            except ValueError:
                continue  # a torn last line, as the loader skips it (a copy "crashed" mid-write)
            if record.get("type") == "child":
                records.append(record)
        by_call = {r["call_id"] for r in records}
        by_session = {r["session"] for r in records}
        if len(by_call) != len(records) or len(by_session) != len(records):
            STATS["children_twice"] += 1
        assert len(by_call) == len(records) == len(by_session), records
        for record in records:
            path = Path(record["session"])
            if not path.exists():
                continue  # recorded, then the parent stopped before the child began
            child = load_session(path)
            items = [json.loads(json.dumps(item_to_json(i))) for i in child.items]
            assert sum(1 for i in items if i["kind"] == "user_message") <= 1, record
            assert _history_valid_after(items, paused=child.cut_off) == [], record

    def _recent(self, n: int = 30) -> list[str]:
        """The last events seen, compactly, for assertion messages."""
        out: list[str] = []
        for e in self.log[-n:]:
            detail = (
                e.data.get("state")
                or e.data.get("result")
                or e.data.get("code")
                or e.data.get("action")
            ) or ""
            out.append(f"{e.event}:{detail}" if detail else e.event)
        return out

    def _pod_fate(self) -> str:
        """Why a connection closed: the pod task's exception, or that it still runs."""
        task = self.pod.task if self.pod is not None else None
        if task is None or not task.done():
            return f"the pod still runs; last events: {self._recent(10)}"
        if task.cancelled():
            return "the pod task was cancelled"
        exc = task.exception()
        if exc is None:
            return f"the pod stopped: {task.result()!r}"
        import traceback

        return "the pod died:\n" + "".join(traceback.format_exception(exc))

    async def _wait_obs(self, name: str, timeout: float, **match: Any) -> bool:
        assert self.obs is not None
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            try:
                got = await self.obs.next_event(timeout=left)
            except TimeoutError:
                return False
            if got is None:
                raise AssertionError(
                    f"the pod closed the observer's connection; {self._pod_fate()}"
                )
            self._absorb([got])
            if got.event == name and all(got.data.get(k) == v for k, v in match.items()):
                return True

    async def _method(self, method: str, params: dict[str, Any] | None = None) -> bool:
        """Send a method and make sure the pod handled it; True when it was accepted."""
        return await self._method_error(method, params) is None

    async def _method_error(self, method: str, params: dict[str, Any] | None = None) -> str | None:
        """Send a method and make sure the pod handled it: the error code it got, if any."""
        assert self.driver is not None
        request_id = _fresh_id("m")
        self.trace.append(f"{method} {json.dumps(params, ensure_ascii=False) if params else ''}")
        await self.driver.send(method, params, id=request_id)
        # Lines of one client are handled in order: this reply means the method was handled.
        await self.driver.request("get_status")
        rejected = [
            e
            for e in self._drain(self.driver)
            if e.event == "error" and e.data.get("id") == request_id
        ]
        for e in rejected:
            assert e.data["code"] in {
                "already_running",
                "not_running",
                "not_paused",
                "not_awaiting_input",
                "invalid_request",
            }, e.data
        assert len(rejected) <= 1, rejected
        return str(rejected[0].data["code"]) if rejected else None

    # -- rules ------------------------------------------------------------------------------

    @initialize(seed=st.integers(0, 2**32 - 1))
    def seed(self, seed: int) -> None:
        self.rng.seed(seed)

    @rule(
        text=st.text(
            alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]),
            min_size=1,
            max_size=24,
        ).filter(lambda s: bool(s.strip())),
        ref=st.sampled_from(["none", "segment", "inline", "missing"]),
    )
    def run(self, text: str, ref: str) -> None:
        params: dict[str, Any]
        if ref == "segment":
            params = {
                "segments": [
                    {"kind": "text", "text": text},
                    {"kind": "file_ref", "path": "README.md"},
                ]
            }
        elif ref == "inline":
            params = {"input": f"{text} @README.md"}
        elif ref == "missing":
            params = {
                "segments": [
                    {"kind": "text", "text": text},
                    {"kind": "file_ref", "path": "nope.md"},
                ]
            }
        else:
            params = {"input": text}
        if self._go(self._method("run", params)):
            STATS["runs_accepted"] += 1

    @rule(
        text=st.sampled_from(["go", "do it again", "list files", "ünïcødé ✓"]),
        wait=st.sampled_from([0.0, 0.01, 0.05, 0.15]),
    )
    def run_then_pause(self, text: str, wait: float) -> None:
        """The common interleaving, made likely: start a turn, let it get going, pause it."""
        if self._go(self._method("run", {"input": text})):
            STATS["runs_accepted"] += 1
        self._go(asyncio.sleep(wait))
        if self._go(self._method("pause")):
            STATS["pauses_accepted"] += 1

    @rule()
    def run_asking(self) -> None:
        """A turn (or the running one's next round) whose reply asks for input."""
        self.responder.force_ask = True
        if self._go(self._method("run", {"input": "ask me something"})):
            STATS["runs_accepted"] += 1

    @rule(
        methods=st.lists(
            st.sampled_from(["run", "pause", "resume", "cancel", "notify", "compact"]),
            min_size=2,
            max_size=4,
        )
    )
    def burst(self, methods: list[str]) -> None:
        """Methods back-to-back in one write: a turn task may be interrupted before it starts."""
        STATS["bursts"] += 1
        params = {"run": {"input": "burst"}, "notify": {"message": "burst note"}}
        data = b"".join(
            json.dumps({"method": m, "params": params.get(m, {})}).encode() + b"\n" for m in methods
        )
        assert self.driver is not None
        self.trace.append(f"burst {methods}")
        self._go(self.driver.send_raw(data))
        self._go(self._settled())

    async def _settled(self) -> None:
        """A pod is never left pausing, cancelling or stopping: each ends once its turn does."""
        assert self.obs is not None
        deadline = time.monotonic() + 10
        while True:
            reply, before = await self.obs.request("get_status")
            self._absorb(before)
            if reply.data["state"] not in ("pausing", "cancelling", "stopping"):
                return
            if time.monotonic() > deadline:
                STATS["lock_ups"] += 1
                raise AssertionError(f"stuck in {reply.data['state']}: {self._recent()}")
            await asyncio.sleep(0.02)

    @rule(mode=st.sampled_from(["plan", "default", "accept-edits", "read-only", "yolo", "nope"]))
    def set_mode(self, mode: str) -> None:
        """Switch the permission mode in whatever state the pod is in (issue 42): taken, or
        refused as ``invalid_request`` when wider than the pod's ``accept-edits`` or no mode.
        The history checks after every step hold in every mode."""
        code = self._go(self._method_error("set_mode", {"mode": mode}))
        assert (code == "invalid_request") == (mode in ("yolo", "nope")), (mode, code)
        if code is None:
            STATS["mode_switches"] += 1

    @rule(
        turn=st.sampled_from([None, 0.0, 1000.0, "absent"]),
        session=st.sampled_from([None, 1000.0, "absent"]),
    )
    def set_budget(self, turn: float | str | None, session: float | str | None) -> None:
        """Change the budgets in whatever state the pod is in (issue 45): a turn budget of $0
        pauses every turn before its next request (``pause_reason: "budget"``), and a resume
        pauses it again at once; $1000 or none lets it go on. Taken in every state but
        stopping and stopped; every check after the step holds through budget pauses."""
        params = {
            key: value
            for key, value in (("turn_budget_usd", turn), ("budget_usd", session))
            if value != "absent"
        }
        code = self._go(self._method_error("set_budget", params))
        if not params:
            assert code == "invalid_request", code
        else:
            assert code in (None, "not_running"), code
        if code is None:
            STATS["budget_changes"] += 1

    @rule()
    def pause(self) -> None:
        if self._go(self._method("pause")):
            STATS["pauses_accepted"] += 1

    @rule()
    def resume(self) -> None:
        if self._go(self._method("resume")):
            STATS["resumes_accepted"] += 1

    @rule()
    def cancel(self) -> None:
        if self._go(self._method("cancel")):
            STATS["cancels_accepted"] += 1

    @rule(focus=st.sampled_from([None, "the files read"]))
    def compact(self, focus: str | None) -> None:
        """A compaction now (idle, paused) or at the running turn's next round boundary."""
        if self._go(self._method("compact", {"focus": focus} if focus else {})):
            STATS["compacts_accepted"] += 1

    # Which prompt is picked by a number drawn up front: what the pod holds depends on timing,
    # and a draw shaped by it makes hypothesis's replays inconsistent (FlakyStrategyDefinition).
    @rule(pick=st.integers(0, 63))
    def rewind(self, pick: int) -> None:
        """Back to before a prompt (idle or paused; refused while a turn runs)."""
        prompts = [i["seq"] for i in self.prev_items if i["kind"] == "user_message"]
        if not prompts:
            return
        to = prompts[pick % len(prompts)]
        if self._go(self._method("rewind", {"to": to, "restore": "conversation"})):
            STATS["rewinds_accepted"] += 1
            assert self._go(self._wait_obs("rewound", 10.0)), "no rewound event"
            # The conversation is what it was before that prompt; nothing else went.
            self.prev_items = [i for i in self.prev_items if i["seq"] < to]

    @rule(pick=st.integers(0, 63))
    def fork(self, pick: int) -> None:
        """A new session from the conversation (any state): it holds a prefix of it."""
        prompts = [i["seq"] for i in self.prev_items if i["kind"] == "user_message"]
        choices: list[int | None] = [None, *prompts]
        at = choices[pick % len(choices)]
        self._go(self._fork(at))

    async def _fork(self, at: int | None) -> None:
        assert self.obs is not None
        reply, before = await self.obs.request("fork", {"at": at} if at else {})
        self._absorb(before)
        if reply.event == "error":
            # Only while a write waits for the disk; never for a prompt of the conversation.
            assert reply.data["code"] == "invalid_request" and "session" in reply.data["message"]
            return
        STATS["forks"] += 1
        forked = [
            json.loads(json.dumps(item_to_json(i)))
            for i in load_session(Path(reply.data["path"])).items
        ]
        now, before = await self.obs.request("get_history")
        self._absorb(before)
        assert forked == now.data["items"][: len(forked)]
        assert at is None or all(i["seq"] < at for i in forked)
        assert _history_valid_after(forked, paused=False) == [] or at is None

    @rule(message=st.sampled_from(["CI finished", "tests are green", "ping ✓"]))
    def notify(self, message: str) -> None:
        if self._go(self._method("notify", {"message": message})):
            STATS["notifies_accepted"] += 1

    @rule()
    def get_history(self) -> None:
        self._go(self._check_history())

    @precondition(lambda self: len(self.extras) < 3)
    @rule()
    def connect_client(self) -> None:
        assert self.pod is not None
        self.extras.append(self._go(self.pod.client()))

    @precondition(lambda self: bool(self.extras))
    @rule(data=st.data())
    def disconnect_client(self, data: st.DataObject) -> None:
        client = self.extras.pop(data.draw(st.integers(0, len(self.extras) - 1)))
        self._go(client.close())

    @rule()
    def wait_text_delta(self) -> None:
        if self.status == "running":
            self._go(self._wait_obs("text_delta", 1.0))

    @rule()
    def wait_executing_tools(self) -> None:
        if self.status == "running":
            self._go(self._wait_obs("status", 1.0, state="executing_tools"))

    @rule()
    def wait_elicitation_request(self) -> None:
        if self.status == "running":
            self._go(self._wait_obs("elicitation_request", 2.0))

    @rule(
        how=st.sampled_from(["accept", "decline", "cancel", "invalid", "stray"]),
        pick=st.integers(0, 3),
        text=st.sampled_from(["yes", "write this down", "ünïcødé ✓", "a b"]),
        invalid=st.sampled_from(INVALID_ANSWERS),
    )
    def answer_elicitation(self, how: str, pick: int, text: str, invalid: dict[str, Any]) -> None:
        """Answer a waiting request for input: accept with a valid form, decline, cancel, a
        form the schema refuses (an error, and the request still waits), or no such request."""
        self._go(self._answer(how, pick, text, invalid))

    @rule(
        how=st.sampled_from(["accept", "decline", "cancel", "invalid"]),
        pick=st.integers(0, 3),
        text=st.sampled_from(["ok", "🙂 fine"]),
        invalid=st.sampled_from(INVALID_ANSWERS),
    )
    def answer_waiting(self, how: str, pick: int, text: str, invalid: dict[str, Any]) -> None:
        """The same without the stray id: answers twice as likely (else turns that ask mostly
        end by interrupts). No precondition on a waiting request: which rules are enabled must
        not depend on the pod's timing, or hypothesis's replays go inconsistent."""
        self._go(self._answer(how, pick, text, invalid))

    async def _answer(self, how: str, pick: int, text: str, invalid: dict[str, Any]) -> None:
        assert self.obs is not None
        if self.status == "running" and not self.asking and how != "stray":
            await self._wait_obs("elicitation_request", 1.0)  # one may be on its way
        reply, before = await self.obs.request("get_status")
        self._absorb(before)
        waiting = [r["id"] for r in reply.data["elicitations"]]
        state = reply.data["state"]
        if how == "stray" or not waiting:
            params = {"id": "input_nobody", "action": "decline"}
            code = await self._method_error("answer_elicitation", params)
            assert code in ("not_awaiting_input", "invalid_request"), code
            return
        input_id = waiting[pick % len(waiting)]
        if how == "invalid":
            params = {"id": input_id, "action": "accept", "content": invalid}
        elif how == "accept":
            params = {"id": input_id, "action": "accept", "content": {"answer": text}}
        else:
            params = {"id": input_id, "action": how}
        if state != "awaiting_input":
            # An interrupt is under way (the request is about to be withdrawn): the answer
            # may come too late, and is refused then.
            code = await self._method_error("answer_elicitation", params)
            if code is None and how != "invalid":
                self.answered[input_id] = how
            return
        if how == "invalid":
            code = await self._method_error("answer_elicitation", params)
            assert code == "invalid_request", (params, code)
            STATS["answers_refused"] += 1
            # Refused, and the request still waits for a fitting answer.
            reply, before = await self.obs.request("get_status")
            self._absorb(before)
            assert input_id in [r["id"] for r in reply.data["elicitations"]], reply.data
            assert reply.data["state"] == "awaiting_input", reply.data["state"]
            return
        self.answered[input_id] = how
        call = self.asking[input_id]["call"]
        code = await self._method_error("answer_elicitation", params)
        assert code is None, (params, code)
        # The answer settles it at once, and the server says back what it got.
        if input_id in self.asking:
            assert await self._wait_obs("elicitation_resolved", 5.0, id=input_id), (
                f"answered {input_id} ({how}) but it was not resolved: {self._recent()}"
            )
        said = f"accept {text}" if how == "accept" else how
        self.expected_results[call] = (f"asked {call}: {said}", self.interrupts)

    @rule()
    def wait_run_end(self) -> None:
        if self.status == "running":
            self._go(self._wait_obs("run_end", 5.0))

    @rule(seconds=st.sampled_from([0.0, 0.005, 0.02, 0.05]))
    def nap(self, seconds: float) -> None:
        self._go(asyncio.sleep(seconds))

    @rule()
    def crash_and_restart(self) -> None:
        """kill -9 at this instant: the session file as fsync'd now is all that survives."""
        STATS["restarts"] += 1
        before, state = self._go(self._status())
        # The calls whose server waits for an answer now: they started, so they were recorded
        # before they were sent, and the restored pod closes them rather than send them again.
        asked = {waiting["call"] for waiting in self.asking.values()}
        if asked:
            STATS["crashes_awaiting_input"] += 1
        copy = self.root / f"s{self.generation}.jsonl"
        shutil.copyfile(self.session_path, copy)  # the loop is stopped: nothing is writing
        snapshot = load_session(copy)
        assert not snapshot.warnings, snapshot.warnings
        items = [json.loads(json.dumps(item_to_json(i))) for i in snapshot.items]
        # Everything get_history reported before the "kill" is in the file.
        if items[: len(self.prev_items)] != self.prev_items:
            STATS["lost"] += 1
        assert items[: len(self.prev_items)] == self.prev_items
        self._go(self._stop_pod())
        self._go(self._start(copy, continue_=True))
        assert self.last_status is not None
        after = self.last_status[0]
        if before == "idle":
            assert not snapshot.cut_off and after == "idle", (before, after)
        elif before == "paused":
            assert snapshot.cut_off and after == "paused", (before, after)
        elif state == "compacting":
            # A compaction between turns (from idle, or over a paused turn) is lost whole: the
            # pod comes back as it was before it, idle or with the turn paused.
            assert after == ("paused" if snapshot.cut_off else "idle"), (before, after)
        else:
            # A turn was alive: it comes back paused, ready to resume.
            assert after == ("paused" if snapshot.cut_off else "idle"), (before, after)
            assert snapshot.cut_off, "a running turn left no trace in the session"
        if after == "paused":
            STATS["restarts_paused"] += 1
        self.prev_items = items
        self._go(self._check_history())
        closed = {
            i["call_id"]: i
            for i in self.prev_items
            if i["kind"] == "tool_result" and i["call_id"] in asked
        }
        assert set(closed) == asked, f"calls asking at the crash left open: {asked - set(closed)}"
        assert all(i["synthetic"] for i in closed.values()), closed

    async def _status(self) -> tuple[str, str]:
        """The pod's status and its machine state."""
        assert self.obs is not None
        reply, before = await self.obs.request("get_status")
        self._absorb(before)
        return str(reply.data["status"]), str(reply.data["state"])

    async def _stop_pod(self) -> None:
        assert self.pod is not None and self.stack is not None
        self._count_validated()
        await self.stack.aclose()  # shuts the pod down and waits for it
        self.stack = None
        if self.obs is not None:
            # Events up to the shutdown (a racing provider error, say) still count.
            self._absorb(await asyncio.wait_for(self.obs.rest(), 10))
            # Shutdown withdrew every request for input still waiting, and said so.
            assert not self.asking, (
                f"requests left unresolved at shutdown: {self.asking}; {self._pod_fate()}; "
                f"events: {self._recent(60)}; did: {self.trace[-40:]}"
            )
        for client in [*self.extras, self.driver, self.obs]:
            if client is not None:
                with contextlib.suppress(Exception):
                    await client.close()
        self.extras = []
        # No child pod outlives its parent.
        deadline = time.monotonic() + 15
        alive = list(self.child_pids.values())
        while alive and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
            alive = [pid for pid in alive if Path(f"/proc/{pid}").exists()]
        if alive:
            STATS["orphan_children"] += 1
        assert not alive, f"child pods outlived their parent: {alive}"
        self.child_pids = {}
        # No background job outlives its pod either (its whole process group ends).
        deadline = time.monotonic() + 15
        jobs = _job_processes()
        while jobs and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
            jobs = _job_processes()
        if jobs:
            STATS["orphan_jobs"] += 1
        assert not jobs, f"background jobs outlived their pod: {jobs}"

    def _count_validated(self) -> None:
        assert self.pod is not None
        self.pod.assert_all_requests_valid()
        requests = len(self.pod.provider.requests)
        STATS["thinking_sent_back"] += sum(
            1
            for request in self.pod.provider.requests[self.validated :]
            for message in request.messages
            if message["role"] == "assistant" and isinstance(message["content"], list)
            for block in message["content"]
            if block.get("type") in ("thinking", "redacted_thinking")
        )
        STATS["server_blocks_sent_back"] += sum(
            1
            for request in self.pod.provider.requests[self.validated :]
            for message in request.messages
            if message["role"] == "assistant" and isinstance(message["content"], list)
            for block in message["content"]
            if block.get("type") in SERVER_BLOCKS
        )
        STATS["requests_validated"] += requests - self.validated
        self.validated = requests

    # -- invariants -------------------------------------------------------------------------

    async def _check_history(self) -> None:
        assert self.obs is not None
        reply, before = await self.obs.request("get_history")
        self._absorb(before)
        first = reply.data["items"]
        on_disk = [
            json.loads(json.dumps(item_to_json(i))) for i in load_session(self.session_path).items
        ]
        reply, before = await self.obs.request("get_history")
        self._absorb(before)
        second = reply.data["items"]
        STATS["history_checks"] += 1
        for items in (first, on_disk, second):
            seqs = [i["seq"] for i in items]
            if STATS["rewinds_accepted"]:
                assert seqs == sorted(set(seqs)), seqs  # rewound numbers are never reused
            else:
                assert seqs == list(range(1, len(items) + 1)), seqs
        # Nothing committed is ever lost or rewritten: each view extends the one before.
        for earlier, later in ((self.prev_items, first), (first, on_disk), (on_disk, second)):
            if later[: len(earlier)] != earlier:
                STATS["lost"] += 1
            assert later[: len(earlier)] == earlier
        STATS["items_checked"] += len(second)
        self.prev_items = second
        self._check_answers(second)

    def _check_todos(self, todos: list[dict[str, Any]]) -> None:
        """At rest, ``status.todos`` is the list of the session file's latest todo record (the
        file rewound as a load rewinds it): the same after a crash, a rewind, a fork."""
        records = load_session(self.session_path).todos
        on_disk = [e.model_dump() for e in records[-1].todos] if records else []
        STATS["todo_checks"] = STATS.get("todo_checks", 0) + 1
        assert todos == on_disk, (todos, on_disk, self._recent())

    def _check_answers(self, items: list[dict[str, Any]]) -> None:
        """An answered ``ask_record`` call's result says what the server got (unless an
        interrupt came since the answer: the call may have been stopped, its result the pod's)."""
        for item in items:
            expected = self.expected_results.get(item.get("call_id", ""))
            if item["kind"] != "tool_result" or expected is None:
                continue
            del self.expected_results[item["call_id"]]
            if item["synthetic"] or self.interrupts > expected[1]:
                continue  # stopped after the answer, before the server's result came back
            STATS["answers_checked"] += 1
            said = f"{item['summary']}\n{item.get('content') or ''}"
            assert expected[0] in said, (expected, item)

    async def _check(self) -> None:
        assert self.obs is not None
        reply, before = await self.obs.request("get_status")
        self._absorb(before)
        if self.driver is not None:
            self._absorb([e for e in self._drain(self.driver) if e.event == "error"])
        status = reply.data["status"]
        assert status in STATUSES
        assert (status, reply.data["state"]) == self.last_status, (
            f"get_status {status}/{reply.data['state']} but the last status event was "
            f"{self.last_status}; recent events: {' '.join(self._recent())}"
        )
        self.status = status
        # The requests for input waiting are exactly those announced and not yet resolved.
        listed = [r["id"] for r in reply.data["elicitations"]]
        assert listed == list(self.asking), (listed, list(self.asking), self._recent())
        if self.asking:
            assert status == "running", (status, self.asking)
        if status in ("idle", "paused"):
            # No turn task: the history is at rest, and nobody is asked anything.
            assert reply.data["state"] != "awaiting_input"
            assert listed == [] and not self.asking
            await self._check_history()
            self._check_todos(reply.data["todos"])
            self._check_tree(self.session_path)
            if status == "idle":
                assert reply.data["children"] == [], reply.data["children"]
            if status == "idle":
                parsed = [item_from_json(i) for i in self.prev_items]
                assert pending_tool_calls(parsed) == []
            assert _history_valid_after(self.prev_items, paused=status == "paused") == []
        # An upward 'errored' only ever follows a provider error (reports are asynchronous,
        # so they may lag, never lead).
        assert self.parent.kinds("errored") <= STATS["run_end_errored"]

    @invariant()
    def pod_is_consistent(self) -> None:
        STATS["steps"] += 1
        self._count_validated()
        self._go(self._check())

    @invariant()
    def no_command_ran_twice(self) -> None:
        ids = self.executions.read_text().split() if self.executions.exists() else []
        twice = {i for i in ids if ids.count(i) > 1}
        STATS["executions"] = STATS["executions"] - self.counted_executions + len(ids)
        STATS["ask_executions"] += sum(
            1 for i in ids[self.counted_executions :] if i.startswith(ASK_PREFIX)
        )
        self.counted_executions = len(ids)
        if twice:
            STATS["executed_twice"] += len(twice)
        assert not twice, f"commands ran twice: {sorted(twice)}"
        blocked = self.responder.denied.intersection(ids)
        STATS["denied_ran"] += len(blocked)
        assert not blocked, f"commands a hook blocked ran: {sorted(blocked)}"

    # -- teardown ---------------------------------------------------------------------------

    def teardown(self) -> None:
        try:
            if self.pod is not None and self.stack is not None:
                self._go(self._teardown(), timeout=60)
        finally:
            self._go(self.parent.close())
            self.loop.close()
            shutil.rmtree(self.root, ignore_errors=True)

    async def _teardown(self) -> None:
        assert self.pod is not None and self.obs is not None and self.driver is not None
        reply, before = await self.obs.request("get_status")
        self._absorb(before)
        paused = reply.data["status"] == "paused"
        snapshot = self.root / "final-crash.jsonl"
        shutil.copyfile(self.session_path, snapshot)
        self._count_validated()
        await self.driver.send("shutdown")
        served = await asyncio.wait_for(self.pod.task, 30)
        self._absorb(await asyncio.wait_for(self.obs.rest(), 10))
        assert not self.asking, (
            f"requests left unresolved at shutdown: {self.asking}; {self._pod_fate()}; "
            f"events: {self._recent(60)}; did: {self.trace[-40:]}"
        )
        await self.obs.close()
        for client in [*self.extras, self.driver]:
            await client.close()
        self.extras = []
        await self.stack.aclose()  # type: ignore[union-attr]
        self.stack = None
        if not served.session_path.exists():
            # A clean stop keeps no session nobody spoke in: only a pod whose file held its
            # header alone (no item, no record) may leave none.
            header_only = len(snapshot.read_bytes().splitlines()) == 1
            assert header_only and self.prev_items == [], "a session with records was removed"
            return
        final = load_session(served.session_path)
        STATS["hook_records"] += served.session_path.read_text().count('"type":"hook"')
        items = [json.loads(json.dumps(item_to_json(i))) for i in final.items]
        if items[: len(self.prev_items)] != self.prev_items:
            STATS["lost"] += 1
        assert items[: len(self.prev_items)] == self.prev_items
        # A clean shutdown closes the turn, paused or not: the file is not cut off.
        assert not final.cut_off
        assert pending_tool_calls(final.items) == []
        assert _history_valid_after(items, paused=False) == []
        # Upward reports were flushed before serve_pod returned; let the listener read them.
        for _ in range(100):
            if self.parent.kinds("shut_down") >= self.generation:
                break
            await asyncio.sleep(0.01)
        errored = self.parent.kinds("errored")
        STATS["upward_errored"] += errored
        # One upward 'errored' per provider failure, none for pauses or cancels.
        assert errored == self.run_ends_errored, (errored, self.run_ends_errored)
        if paused:
            # The same pod killed while paused comes back paused, and a new run works.
            restored = load_session(snapshot)
            assert restored.cut_off
            async with running_pod(
                self.ws,
                self._sock_dir("final"),
                continue_=True,
                session=snapshot,
                replies=[ScriptedReply(text="back again", chunk_size=3)],
                allow_bash=True,
            ) as pod:
                c = await pod.client()
                status = await c.request("get_status")
                assert status.data["status"] == "paused"
                history = (await c.request("get_history")).data["items"]
                assert history == [json.loads(json.dumps(item_to_json(i))) for i in restored.items]
                # Budgets the fuzz set are kept in the session (a $0 one would pause the run).
                lifted = await c.request(
                    "set_budget", {"budget_usd": None, "turn_budget_usd": None}
                )
                assert lifted.event == "status", lifted.data
                await c.send("run", {"input": "carry on"})
                got = await c.wait_for("run_end", timeout=20)
                assert got.data == {"result": "finished"}
                pod.assert_all_requests_valid()
                STATS["requests_validated"] += len(pod.provider.requests)
                await c.close()

    def _sock_dir(self, name: str) -> Path:
        path = self.root / name
        path.mkdir()
        return path


@pytest.mark.slow
def test_lifecycle_fuzz_short() -> None:
    """The CI profile: a few short examples."""
    _reset_stats()
    run_state_machine_as_test(
        PodFuzz,
        settings=settings(
            max_examples=15,
            stateful_step_count=25,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            database=None,
        ),
    )
    print(json.dumps({"profile": "short", **STATS}))
    assert STATS["lost"] == 0
    assert STATS["executed_twice"] == 0
    assert STATS["children_twice"] == 0 and STATS["orphan_children"] == 0
    assert STATS["orphan_jobs"] == 0
    assert STATS["steps"] > 0
    assert STATS["elicitations_asked"] > 0  # a run where nobody was asked proves nothing
    # Server loops were drawn, paused and sent back (every request above was wire-valid).
    assert STATS["pause_turns"] > 0 and STATS["server_blocks_sent_back"] > 0


class PodFuzzHooks(PodFuzz):
    """The same fuzz with hooks on every event that can hold a turn up (issue 24)."""

    hooks = True


@pytest.mark.slow
def test_lifecycle_fuzz_short_with_hooks() -> None:
    """The CI profile with hooks: a blocked command never runs, crash and resume included."""
    _reset_stats()
    run_state_machine_as_test(
        PodFuzzHooks,
        settings=settings(
            # POD_FUZZ_HOOK_EXAMPLES=60 for a deeper run than CI's.
            max_examples=int(os.environ.get("POD_FUZZ_HOOK_EXAMPLES", "8")),
            stateful_step_count=25,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            database=None,
        ),
    )
    print(json.dumps({"profile": "short-hooks", **STATS}))
    assert STATS["lost"] == 0
    assert STATS["executed_twice"] == 0 and STATS["denied_ran"] == 0
    assert STATS["hook_records"] > 0  # a run where no hook ran proves nothing


class PodFuzzThinking(PodFuzz):
    """The same fuzz with extended thinking on (issue 21)."""

    thinking = True


@pytest.mark.slow
def test_lifecycle_fuzz_short_with_thinking() -> None:
    """The CI profile with thinking on: zero invalid requests, and thinking went back."""
    _reset_stats()
    run_state_machine_as_test(
        PodFuzzThinking,
        settings=settings(
            max_examples=15,
            stateful_step_count=25,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            database=None,
        ),
    )
    print(json.dumps({"profile": "short-thinking", **STATS}))
    assert STATS["lost"] == 0
    assert STATS["executed_twice"] == 0
    assert STATS["thinking_sent_back"] > 0  # a run that quietly had thinking off fails
    assert STATS["server_blocks_sent_back"] > 0  # server loops with thinking on, too


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("POD_FUZZ_STEPS"), reason="set POD_FUZZ_STEPS=10000")
def test_lifecycle_fuzz_long() -> None:
    """The long profile: at least ``POD_FUZZ_STEPS`` steps; writes bench/results/fuzz.json."""
    target = int(os.environ["POD_FUZZ_STEPS"])
    _reset_stats()
    started = time.monotonic()
    rounds = 0
    while STATS["steps"] < target:
        rounds += 1
        run_state_machine_as_test(
            PodFuzz,
            settings=settings(
                max_examples=50,
                stateful_step_count=50,
                deadline=None,
                suppress_health_check=list(HealthCheck),
                database=None,
            ),
        )
    summary = {
        "profile": "long",
        "target_steps": target,
        "hypothesis_rounds": rounds,
        **STATS,
        "runs": STATS["runs_accepted"],
        "pauses": STATS["pauses_accepted"],
        "cancels": STATS["cancels_accepted"],
        "resumes": STATS["resumes_accepted"],
        "elapsed_s": round(time.monotonic() - started, 1),
    }
    out = ROOT / "bench" / "results" / "fuzz.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary))
    assert STATS["lost"] == 0
    assert STATS["executed_twice"] == 0
    assert STATS["lock_ups"] == 0
