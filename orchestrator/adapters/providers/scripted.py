"""An offline, deterministic provider: scripted replies, or an honest built-in demo.

Tests drive it with a list of :class:`ScriptedReply` (text streamed in chunks with delays, tool
calls, thinking, errors) or a responder callable; ``pod serve --script FILE`` loads the same
replies from JSON (docs/scripted-provider.md). With no script it runs the demo responder,
which never pretends to be a model: it says it is the offline provider, reports what it was
given (attached files, tool results) and shows the tool loop by calling real tools (glob, and
bash when the pod allows it).

Every request it receives is checked with the wire validator and rejected like the real API
would, so a bug that breaks the history fails loudly here too.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import re
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from orchestrator.adapters.providers.base import (
    AlertCallback,
    CitationDelta,
    PromptTooLongError,
    ProviderConfigError,
    ProviderError,
    ProviderRejectedError,
    ProviderRequest,
    ProviderStreamError,
    ResponseComplete,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallArgsDelta,
    ToolCallStart,
    Usage,
)
from orchestrator.adapters.providers.scripted_checks import (
    changed_thinking,
    request_record,
    scripted_summary,
    sign_thinking,
)
from orchestrator.adapters.providers.scripted_web import (
    ScriptedCitation,
    ScriptedServerCall,
    ServerRun,
    changed_server_content,
    citation_block,
    open_calls_in,
    run_server_call,
)
from orchestrator.config.regular_file import read_regular
from orchestrator.core.history import (
    Block,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
)
from orchestrator.core.thinking import ModelThinking
from orchestrator.core.tokens import MessageTokens, estimate_text
from orchestrator.core.validator import IncrementalValidator
from orchestrator.core.web import ModelWeb


class ScriptedToolCall(BaseModel):
    """A tool call the scripted model makes."""

    model_config = ConfigDict(extra="forbid")

    name: str
    input: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None


class ScriptedReply(BaseModel):
    """One scripted response: optional thinking, text in chunks, tool calls, or an error."""

    model_config = ConfigDict(extra="forbid")

    text: str = ""
    thinking: str | None = None
    """Thinking sent before the text, when the request turns thinking on."""
    redacted_thinking: list[str] = Field(default_factory=list)
    """Opaque ``redacted_thinking`` blocks after the thinking, when thinking is on."""
    tool_calls: list[ScriptedToolCall] = Field(default_factory=list)
    chunk_size: int = Field(default=16, ge=1)
    chunk_delay_s: float = Field(default=0.0, ge=0)
    error: str | None = None
    """Raise this provider error instead of answering (``error_after_chunks`` may delay it)."""
    error_kind: Literal["stream", "rejected", "overloaded"] = "stream"
    """``stream`` (connection dropped), ``rejected`` (a 400) or ``overloaded`` (a 529)."""
    error_after_chunks: int = Field(default=0, ge=0)
    """Stream this many text chunks before the error."""
    server_calls: list[ScriptedServerCall] = Field(default_factory=list)
    """Web searches and fetches the API runs, before the text (scripted_web.py)."""
    citations: list[ScriptedCitation] = Field(default_factory=list)
    """Sources the text cites (it needs a ``text``)."""
    stop_reason: Literal["pause_turn"] | None = None
    """``pause_turn``: the API's own loop paused; the pod sends the continuation."""


class Script(BaseModel):
    """A scripted provider's file format: replies consumed in order, then the demo."""

    model_config = ConfigDict(extra="forbid")

    replies: list[ScriptedReply] = Field(default_factory=list)
    summary_delay_s: float = Field(default=0.0, ge=0)
    """Pause between the chunks of a compaction summary."""
    request_log: str | None = None
    """A JSONL file (relative to the script's folder) that gets one line per request."""


Responder = Callable[[ProviderRequest], ScriptedReply]

SCRIPT_MAX_BYTES = 64 << 20
"""A script file larger than this is refused, not read."""


@dataclass
class ScriptedProvider:
    """A provider that answers from a script, a responder, or the built-in demo."""

    replies: list[ScriptedReply] = field(default_factory=list)
    responder: Responder | None = None
    model: str = "scripted-demo"
    name: str = "scripted"
    requests: list[ProviderRequest] = field(default_factory=list)
    on_alert: AlertCallback | None = None
    """Unused: the scripted provider never retries."""
    window: int = 200_000
    """Its context window: a longer request is refused like the API refuses one."""
    summary_delay_s: float = 0.0
    """Pause between the chunks of a compaction summary (to interrupt one in a test or demo)."""
    thinking: ModelThinking | None = None
    """What thinking it says the model accepts; None: it cannot tell (``auto`` sends none)."""
    request_log: Path | None = None
    """Where to append one JSON line per request received (:func:`request_record`): a test or
    benchmark outside the pod's process counts what reached the "API" from it."""
    _next_id: int = 0
    _session_tag: str = field(default_factory=lambda: uuid.uuid4().hex[:8])
    _validator: IncrementalValidator = field(default_factory=IncrementalValidator)
    _message_tokens: MessageTokens = field(default_factory=MessageTokens)

    @classmethod
    def from_file(cls, path: Path) -> ScriptedProvider:
        """Load a JSON script (``{"replies": [...]}``); a bad file is one clear error."""
        try:
            script = Script.model_validate_json(read_regular(path, max_bytes=SCRIPT_MAX_BYTES))
        except OSError as exc:
            raise ProviderConfigError(
                f"cannot read the script {path}: {exc.strerror or exc}"
            ) from None
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "the file"
            raise ProviderConfigError(
                f"the script {path} is not valid: {where}: {first['msg']} "
                "(format: docs/scripted-provider.md)"
            ) from None
        log = script.request_log
        return cls(
            replies=list(script.replies),
            summary_delay_s=script.summary_delay_s,
            request_log=None if log is None else path.parent / log,
        )

    def _reply_for(self, request: ProviderRequest) -> ScriptedReply:
        if self.replies:
            return self.replies.pop(0)
        if self.responder is not None:
            return self.responder(request)
        return demo_reply(request)

    def _call_id(self, prefix: str) -> str:
        # Unique across restarts: a reloaded session already holds earlier ids.
        self._next_id += 1
        return f"{prefix}_scripted_{self._session_tag}_{self._next_id:04d}"

    async def stream(self, request: ProviderRequest) -> AsyncIterator[StreamEvent]:
        """Stream the next reply as deltas, then the complete response."""
        self.requests.append(request)
        # The API checks and counts on its own machines: a long request is done off the loop.
        long = len(request.messages) > 1_000
        thinking_on = request.thinking is not None and request.thinking["type"] != "disabled"
        self._validator.thinking = thinking_on
        changed = changed_thinking(request.messages) or changed_server_content(request.messages)
        if changed is not None:
            self._log_request(request, changed)
            raise ProviderRejectedError(changed, status=400)
        violations = (
            await asyncio.to_thread(self._validator.validate, request.messages)
            if long
            else self._validator.validate(request.messages)
        )
        if violations:
            message = "invalid request: " + "; ".join(str(v) for v in violations)
            self._log_request(request, message)
            raise ProviderRejectedError(message, status=400)
        # As the API would refuse it: a prompt past the window (counted incrementally, the
        # way the pod's own estimate is, so a long session stays cheap to fake).
        count = functools.partial(
            self._message_tokens.request, request.system, request.tools, request.messages
        )
        tokens = await asyncio.to_thread(count) if long else count()
        if tokens > self.window:
            message = f"prompt is too long: {tokens} tokens > {self.window} maximum"
            self._log_request(request, message)
            raise PromptTooLongError(message, status=400)
        self._log_request(request, None)
        if request.purpose == "compaction":
            reply = ScriptedReply(
                text=scripted_summary(request), chunk_size=16, chunk_delay_s=self.summary_delay_s
            )
        else:
            reply = self._reply_for(request)
        blocks: list[Block] = []
        chunks_sent = 0

        def maybe_fail() -> None:
            if reply.error is not None and chunks_sent >= reply.error_after_chunks:
                raise _scripted_error(reply)

        maybe_fail()
        # Like the API: thinking only when the request turns it on.
        if thinking_on and reply.thinking is not None:
            if reply.thinking:
                yield ThinkingDelta(reply.thinking)
            blocks.append(
                ThinkingBlock(thinking=reply.thinking, signature=sign_thinking(reply.thinking))
            )
        if thinking_on:
            blocks += [RedactedThinkingBlock(data=data) for data in reply.redacted_thinking]
        server = ServerRun()
        if request.purpose != "compaction":
            # Like the API: calls left open (pause_turn, or the mixed case) run first.
            for call_id, name, call_input in open_calls_in(request.messages):
                kind = "web_fetch" if name == "web_fetch" else "web_search"
                opened = ScriptedServerCall.model_validate({"name": kind, "input": call_input})
                server.result(call_id, opened)
            for server_call in reply.server_calls:
                call_id = server_call.id or self._call_id("srvtoolu")
                run_server_call(server, call_id, server_call)
        for event in server.events:
            await asyncio.sleep(0)
            yield event
        blocks += server.blocks
        if reply.text:
            for start in range(0, len(reply.text), reply.chunk_size):
                if reply.chunk_delay_s:
                    await asyncio.sleep(reply.chunk_delay_s)
                else:
                    await asyncio.sleep(0)  # a real stream yields to the loop between events
                yield TextDelta(reply.text[start : start + reply.chunk_size])
                chunks_sent += 1
                maybe_fail()
            cites = [citation_block(c) for c in reply.citations] or None
            for cite in cites or []:
                yield CitationDelta(cite)
            blocks.append(TextBlock(text=reply.text, citations=cites))
        for call in reply.tool_calls:
            call_id = call.id or self._call_id("toolu")
            yield ToolCallStart(call_id, call.name)
            yield ToolCallArgsDelta(call_id, json.dumps(call.input))
            blocks.append(ToolUseBlock(id=call_id, name=call.name, input=call.input))
        if reply.error is not None:
            raise _scripted_error(reply)
        stop = reply.stop_reason or ("tool_use" if reply.tool_calls else "end_turn")
        usage = Usage(
            input_tokens=tokens,
            output_tokens=max(1, estimate_text(reply.text)),
            web_search_requests=server.searches,
            web_fetch_requests=server.fetches,
        )
        yield ResponseComplete(blocks=blocks, stop_reason=stop, usage=usage)

    def _log_request(self, request: ProviderRequest, refused: str | None) -> None:
        if self.request_log is None:
            return
        line = json.dumps(request_record(request, refused)) + "\n"
        # One append-mode write per line: a pod killed mid-request leaves whole lines behind
        # (or at worst a torn last one, which a reader skips).
        fd = os.open(self.request_log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)

    async def context_window(self) -> int | None:
        """The window it enforces."""
        return self.window

    async def list_models(self) -> list[tuple[str, str]]:
        """Its one model: the script answers whatever model is asked."""
        return [(self.model, "Offline scripted provider")]

    async def thinking_capabilities(self) -> ModelThinking | None:
        """What it was told the model accepts."""
        return self.thinking

    async def web_capabilities(self) -> ModelWeb | None:
        """None run here: its replies come from a script, and no API runs server tools."""
        return ModelWeb.no_server_tools(self.model, "the scripted provider runs no server tools")


def _scripted_error(reply: ScriptedReply) -> ProviderError:
    message = reply.error or "scripted failure"
    if reply.error_kind == "rejected":
        return ProviderRejectedError(message, status=400)
    if reply.error_kind == "overloaded":
        return ProviderError(message, status=529, retryable=True)
    return ProviderStreamError(message)


# -- the demo responder ----------------------------------------------------------------------

DEMO_CHUNK_CHARS = 6
DEMO_CHUNK_DELAY_S = 0.03
"""The demo streams about 200 characters (some 50 tokens) a second, the pace of a real model:
a reply of a few hundred characters takes 2-3 s, long enough to read along and pause it
mid-stream, short enough not to keep anyone waiting."""
DEMO_SLOW_CHUNK_DELAY_S = 0.12
"""With "slowly" in the prompt: a quarter of that pace (about 50 characters a second)."""
DEMO_PACE_ENV = "POD_DEMO_PACE"
"""A factor on those delays (1 when unset or not in 0-10; 0 streams without waiting): a test that
needs the demo's words but not a reader's pace sets 0 rather than wait seconds a reply."""

SHORT_COMMAND = "echo 'hello from bash'; date; ls"
"""What "run a command" runs: done in milliseconds."""
LONG_COMMAND = 'for i in $(seq 1 30); do echo "step $i of 30"; sleep 1; done'
"""What "run a long command" runs: 30 s of live output, time to pause it while it runs."""

PAUSE_HINT = (
    "Pause the turn while I stream or a command runs with your client's stop key: Ctrl-C in "
    "pod chat and pod run, your editor's own elsewhere (Esc Esc in Toad)"
)
"""How the demo says to pause: what to do, then the key per client, since a reply cannot
know which client shows it (an editor speaking ACP does not use Ctrl-C)."""

_DEMO_INTRO = (
    "I am the offline scripted provider (no ANTHROPIC_API_KEY is set), not a language model. "
    "I show how this pod works: streaming, tools, @file attachments, pause and resume."
)
_DEMO_MENU = (
    "Things to try:\n"
    "- `@README.md` attaches a file (type @ to complete a path)\n"
    '- "list the files" calls the glob tool\n'
    '- "run a command" runs a short bash command; "run a long command" runs one for 30 s '
    "that you can pause while it prints (each asks before it runs; in a pod started with "
    "`pod chat --allow-bash` they run without asking)\n"
    '- "answer slowly" streams this reply at a quarter of the pace\n'
    '- "delegate" starts two child pods with the task tool (each a pod of its own)\n'
    # A blank line ends the list: without it Markdown reads the next line as part of the last
    # item. The demo cannot know which client shows it, so it names the key by what it does.
    "\n"
    f"{PAUSE_HINT}. In pod chat, Enter on an empty line then resumes it; Ctrl-X cancels."
)
_NO_BASH = (
    "Running a command needs the bash tool, which is off for this pod. Start the pod with it "
    "allowed: `pod shutdown`, then `pod chat --allow-bash` (or `pod run --allow-bash "
    '"run a command"`). Then ask me again.'
)
_LONG_COMMAND = re.compile(r"\blong command\b", re.IGNORECASE)
_SHORT_COMMAND = re.compile(r"\brun (a |the |one )?(short |quick )?command\b", re.IGNORECASE)
_LIST_FILES = re.compile(r"\b(list|show) (the )?files\b", re.IGNORECASE)
_SLOW = re.compile(r"\bslow(ly)?\b", re.IGNORECASE)
_DELEGATE = re.compile(r"\b(delegate|sub-?pods?|child pods?)\b", re.IGNORECASE)
DEMO_TASKS = (
    {"prompt": "list the files", "name": "files"},
    {"prompt": "say what you are, slowly", "name": "hello"},
)
"""What "delegate" hands to two child pods (which answer with the demo too)."""


def _last_user_texts(request: ProviderRequest) -> tuple[list[str], list[dict[str, Any]]]:
    if not request.messages or request.messages[-1]["role"] != "user":
        return [], []
    texts: list[str] = []
    results: list[dict[str, Any]] = []
    for block in request.messages[-1]["content"]:
        if block.get("type") == "text":
            texts.append(block["text"])
        elif block.get("type") == "tool_result":
            results.append(block)
    return texts, results


def _demo_pace() -> float:
    try:
        pace = float(os.environ.get(DEMO_PACE_ENV, "1"))
    except ValueError:
        return 1.0
    return pace if 0.0 <= pace <= 10.0 else 1.0  # NaN, negative or huge: the usual pace


def _demo_text(
    text: str, *, slow: bool = False, tool_calls: list[ScriptedToolCall] | None = None
) -> ScriptedReply:
    delay = DEMO_SLOW_CHUNK_DELAY_S if slow else DEMO_CHUNK_DELAY_S
    return ScriptedReply(
        text=text,
        tool_calls=tool_calls or [],
        chunk_size=DEMO_CHUNK_CHARS,
        chunk_delay_s=delay * _demo_pace(),
    )


def _clipped(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters at a word's end, marked with ``…``."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    return (cut.rsplit(" ", 1)[0] if " " in cut else cut).rstrip(" ,;:(") + "…"


def demo_reply(request: ProviderRequest) -> ScriptedReply:
    """What the offline demo says to a request: honest about itself, useful about the input."""
    texts, results = _last_user_texts(request)
    prompt = next(
        (t for t in reversed(texts) if not t.startswith("[") or t.startswith("[unresolved")), ""
    )
    # Results beside a new prompt are those of an interrupted turn: the person moved on.
    if results and not prompt:
        lines = [f"The tool returned {len(results)} result(s):"]
        for block in results:
            content = str(block.get("content", ""))
            first = content.splitlines()[0] if content else "(empty)"
            flag = " (error)" if block.get("is_error") else ""
            lines.append(f"- {_clipped(first, 100)}{flag}")
        lines.append("")  # ends the list, or Markdown runs the next line into its last item
        lines.append("That is the whole tool loop: request, tool call, result, next request.")
        return _demo_text("\n".join(lines))
    files = [t for t in texts if t.startswith("[File: ") or t.startswith("[Dir: ")]
    slow = bool(_SLOW.search(prompt))
    if files:
        lines = [_DEMO_INTRO, "", "You attached:"]
        for body in files:
            header, _, rest = body.partition("\n")
            first = next((line for line in rest.splitlines() if line.strip()), "(empty)")
            lines.append(
                f"- {header[1:-1]}: {len(rest.splitlines())} lines, starting `{first[:60]}`"
            )
        return _demo_text("\n".join(lines), slow=slow)
    tool_names = {t["name"] for t in request.tools}
    command = (
        LONG_COMMAND
        if _LONG_COMMAND.search(prompt)
        else SHORT_COMMAND
        if _SHORT_COMMAND.search(prompt)
        else None
    )
    if command is not None:
        if "bash" not in tool_names:
            return _demo_text(_NO_BASH, slow=slow)
        what = (
            "30 seconds; pause the turn while it runs (Ctrl-C in pod chat, your client's stop "
            "key elsewhere)"
            if command == LONG_COMMAND
            else "a moment"
        )
        return _demo_text(
            f"Running a command with the bash tool; it takes {what}.",
            slow=slow,
            tool_calls=[ScriptedToolCall(name="bash", input={"command": command})],
        )
    if _DELEGATE.search(prompt) and "task" in tool_names:
        return _demo_text(
            "Delegating two tasks to child pods with the task tool; they run at once, each "
            "in a pod of its own (pausing the turn pauses them all).",
            slow=slow,
            tool_calls=[ScriptedToolCall(name="task", input=dict(task)) for task in DEMO_TASKS],
        )
    if _LIST_FILES.search(prompt) and "glob" in tool_names:
        return _demo_text(
            "Let me list the files with the glob tool.",
            slow=slow,
            tool_calls=[ScriptedToolCall(name="glob", input={"pattern": "*"})],
        )
    echo = prompt.strip() or "(nothing)"
    return _demo_text(f"{_DEMO_INTRO}\n\nYou said: {echo[:500]}\n\n{_DEMO_MENU}", slow=slow)
