"""The turn loop: request → stream → commit → tools → next round.

A turn runs as one asyncio task owned by the controller. It never touches the lifecycle
machine's state directly: it reports round boundaries through ``host.signal`` and ends by
returning a :class:`TurnResult` or raising (``CancelledError`` for an interrupt,
:class:`TurnError` for a failure). A partial stream is never committed; an assistant message
is committed whole, then its tool results one by one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, Literal, Protocol

from pydantic import BaseModel

from orchestrator.adapters.providers.base import (
    CitationDelta,
    PromptTooLongError,
    Provider,
    ProviderError,
    ProviderRequest,
    ResponseComplete,
    ServerToolCall,
    ServerToolResult,
    TextDelta,
    ThinkingDelta,
    ToolCallArgsDelta,
    ToolCallStart,
    refused_window,
)
from orchestrator.capabilities.hooks import HookEvent
from orchestrator.capabilities.hooks.chain import InterceptorChain
from orchestrator.core.history import AssistantMessage, Compaction, History, Item, ToolUseBlock
from orchestrator.core.interceptors import ContinueWithMessages, Pause
from orchestrator.core.model_output import normalize_reply
from orchestrator.core.prompt_cache import CacheTTL
from orchestrator.core.repair import pending_tool_calls
from orchestrator.core.server_loop import (
    PAUSE_TURN,
    awaits_continuation,
    close_server_calls,
    server_rules_kept,
)
from orchestrator.core.server_tools import cited_source, summarize_result
from orchestrator.core.thinking import ThinkingPlan
from orchestrator.core.validator import IncrementalValidator
from orchestrator.core.web import WebPlan
from orchestrator.errors import PodRuntimeError
from orchestrator.protocol import (
    CitationData,
    ServerToolCallData,
    ServerToolResultData,
    SourceData,
    TextData,
    ThinkingData,
    ToolCallArgsDeltaData,
    ToolCallStartData,
    UsageData,
)
from orchestrator.runtime.compaction import (
    CompactionError,
    CompactionNotSmaller,
    CompactionRequest,
    Compactor,
)
from orchestrator.runtime.context import Context
from orchestrator.runtime.fallback import Fallback
from orchestrator.runtime.tool_runner import ToolRunner, ToolsPaused

TurnResult = Literal["finished", "limit_reached", "paused"]

_TOO_LONG = (
    "the conversation does not fit the model's context window even after compacting "
    "({detail}). Start a new session (pod chat --new), or compact with a narrower focus "
    "(/compact <what matters>)."
)


_ALONE_TOO_LONG = (
    "the latest message alone does not fit the model's context window ({detail}), and nothing "
    "older is left to compact. It stays in the history, and the next message compacts it into "
    "a summary; attach less next time (a line range: @file:L1-L200)."
)


def last_exchange(items: list[Item]) -> Item | None:
    """The last item of the conversation itself (a compaction only changes the view)."""
    for item in reversed(items):
        if not isinstance(item, Compaction):
            return item
    return None


class TurnError(PodRuntimeError):
    """A turn failed; ``code`` is the protocol error code to report."""

    def __init__(self, message: str, *, code: str = "provider_error") -> None:
        super().__init__(message)
        self.code = code


class TurnHost(Protocol):
    """What the turn loop needs from the controller."""

    history: History

    def commit(self, item: Item) -> Item:
        """Append an item to history, persist it, and tell clients."""
        ...

    def emit(self, event: str, data: BaseModel | dict[str, Any]) -> None:
        """Broadcast an event."""
        ...

    def alert(self, level: str, source: str, message: str) -> None:
        """Broadcast an alert a person should see."""
        ...

    def signal(self, event: str) -> None:
        """Send a round event (``tools_started`` / ``round_done``) to the lifecycle machine."""
        ...

    @property
    def thinking_plan(self) -> ThinkingPlan:
        """What every request asks for in thinking and effort."""
        ...

    @property
    def web_plan(self) -> WebPlan:
        """The API's web tools every turn request declares (docs/web.md)."""
        ...

    async def before_tools(self, calls: list[ToolUseBlock]) -> None:
        """Called before a round's tools run (the workspace checkpoint)."""
        ...

    async def wire_messages(self) -> list[dict[str, Any]]:
        """The wire messages for the next request (pruned, incrementally built)."""
        ...

    @property
    def context(self) -> Context:
        """The model's view and how full its window is."""
        ...

    @property
    def compactor(self) -> Compactor:
        """Makes and commits compactions."""
        ...

    def take_compaction_request(self) -> CompactionRequest | None:
        """A compaction someone asked for (``compact``) since the last round, if any."""
        ...

    async def learn_window(self) -> None:
        """Make sure the model's context window is known (asks the provider once)."""
        ...


@dataclass(slots=True, kw_only=True)
class Turn:
    """One turn's loop; ``run`` is awaited inside the controller's turn task."""

    host: TurnHost
    provider: Provider
    tools: ToolRunner
    interceptors: InterceptorChain
    system_prompt: str
    model: str
    max_tokens: int
    max_rounds: int
    validator: IncrementalValidator
    cache_ttl: CacheTTL | None = "5m"
    """Prompt-cache TTL of the turn's requests; None sends no breakpoints."""
    max_tokens_spent: int | None = None
    """The turn's token budget (``max_turn_tokens``); None: none."""
    spent: Callable[[], int] = lambda: 0
    """Tokens the turn's requests used so far."""
    budget_reached: Callable[[int], bool] = lambda tokens: False
    """Whether a budget in dollars stops the turn before a request of this many input tokens
    (0: before a response's calls run); the host says so to people (docs/budgets.md)."""
    budgeted: Callable[[], bool] = lambda: False
    """Whether any budget is set (an unbudgeted turn estimates nothing for it)."""
    subagent: bool = False
    """This pod is a child pod: its turn's end is ``SubagentStop`` to hooks, not ``Stop``."""
    rounds: int = 0
    stop_hook_active: bool = False
    """The turn goes on because a stop hook said so (hooks read it, to not loop forever)."""
    fallback: Fallback | None = None
    """Where a request that keeps failing goes next (``fallback_model``); None: nowhere."""
    compaction_futile: bool = False
    """A compaction of this turn would not have made the context smaller: the turn does not
    ask for another on its own (each is a summary request)."""

    async def run(self) -> TurnResult:
        """Run rounds until the model ends the turn, a limit, or an interceptor's pause."""
        await self.host.learn_window()
        try:
            return await self._rounds()
        except ToolsPaused:  # a pre-tool interceptor said Pause; the calls stay pending
            return "paused"

    async def _rounds(self) -> TurnResult:
        items = self.host.history.items
        while True:
            pending = pending_tool_calls(items)
            if pending:
                if self.budget_reached(0):
                    # The response that asked for them reached a budget: the calls wait,
                    # unstarted, as a pause before them leaves them (resume runs them).
                    return "paused"
                # A resumed turn (or an interceptor pause) left calls that never started.
                await self._run_tools(pending)
            elif awaits_continuation(items):
                pass  # a paused server loop (pause_turn): the next request continues it
            elif isinstance(last_exchange(items), AssistantMessage):
                # The model had already answered when the pod stopped (a crash between the
                # commit and turn_end): the turn is over, asking again would be a prefill.
                return await self._turn_end_action() or "finished"
            if self.rounds >= self.max_rounds:
                return "limit_reached"
            if self.max_tokens_spent is not None and self.spent() >= self.max_tokens_spent:
                self.host.alert(
                    "warn",
                    "turn",
                    f"the turn stopped: it used {self.spent():,} tokens, its budget is "
                    f"{self.max_tokens_spent:,} (max_turn_tokens)",
                )
                return "limit_reached"
            if await self._over_budget():
                return "paused"  # before a compaction's summary request as much as the turn's
            messages = await self._compact_if_due()
            if messages is None and await self._over_budget():
                return "paused"  # the compacted request, smaller, still passes a budget
            message = await self._request_fitting(messages)
            self.rounds += 1
            if message is not None and message.tool_uses:
                if self.budget_reached(0):
                    return "paused"  # this response reached a budget: its calls wait
                # Calls answered at commit (an invalid name) are not pending: they never run.
                await self._run_tools(pending_tool_calls(items))
                continue
            if message is not None and awaits_continuation(items):
                # The API's own loop paused (pause_turn): a round that continues, not an end.
                # It counts against max_rounds like any request, so a server loop that never
                # ends still stops.
                continue
            verdict = await self._turn_end_action()
            if verdict is not None:
                return verdict

    async def _over_budget(self) -> bool:
        """Whether the next request would start past a budget: what was spent plus its
        input, estimated as the window's check estimates it (no request is sent to count)."""
        if not self.budgeted():
            return False
        messages = await self.host.wire_messages()
        tools = [*self._client_tools(), *self.host.web_plan.server_tools]
        tokens = self.host.context.estimate(self.system_prompt, tools, messages)
        return self.budget_reached(max(1, tokens))

    async def _turn_end_action(self) -> TurnResult | None:
        """Ask the turn-end interceptors and stop hooks; None means run another round.

        Interrupted while a stop hook runs, the hook counts as not run: the turn pauses with
        the model's answer committed, and Resume asks the hooks again.
        """
        action = await self.interceptors.stop(
            self.host.history.items, active=self.stop_hook_active, subagent=self.subagent
        )
        if isinstance(action, Pause):
            return "paused"
        if isinstance(action, ContinueWithMessages):
            self.stop_hook_active = True
            for item in action.items:
                self.host.commit(item)
            return None
        return "finished"

    async def _compact_if_due(self) -> list[dict[str, Any]] | None:
        """Compact before the request when asked to, or when it would not fit comfortably.

        Returns the wire messages it sized the request with, or None after a compaction
        (the view changed).
        """
        if awaits_continuation(self.host.history.items):
            # The continuation goes out as it is: a compaction would commit notes after the
            # paused content. The next round boundary compacts, if still due.
            return await self.host.wire_messages()
        request = self.host.take_compaction_request()
        messages = await self.host.wire_messages()
        if request is None:
            context = self.host.context
            tools = [*self._client_tools(), *self.host.web_plan.server_tools]
            estimate = context.estimate(self.system_prompt, tools, messages)
            if context.due(estimate) and not self.compaction_futile:
                request = CompactionRequest(trigger="auto")
        if request is None:
            return messages
        await self._compact(request)
        return None

    async def _request_fitting(
        self, messages: list[dict[str, Any]] | None
    ) -> AssistantMessage | None:
        """The request; if the API says it is too long, compact and try once more."""
        try:
            return await self._request(messages)
        except PromptTooLongError as exc:
            window = refused_window(str(exc))
            if self.host.context.learn_refused_window(window):
                # The window the pod assumed was wrong: size the recovery (and every later
                # compaction) for the one the API named, or the summary keeps too much.
                self.host.alert(
                    "warn",
                    "context",
                    f"the API says the model's context window is {window:,} tokens, smaller "
                    "than the pod assumed; compacting for that. Set context_window in "
                    ".pod/config.toml to the model's real window.",
                )
            compacted = await self._compact(CompactionRequest(trigger="recovery"))
            if compacted is None:
                raise TurnError(_ALONE_TOO_LONG.format(detail=exc), code="provider_error") from exc
        try:
            return await self._request()
        except PromptTooLongError as exc:
            raise TurnError(_TOO_LONG.format(detail=exc), code="provider_error") from exc

    async def _compact(self, request: CompactionRequest) -> Compaction | None:
        """One compaction between rounds; the machine shows it as ``summarizing``."""
        self.host.signal("compaction_started")
        if self.interceptors.has(HookEvent.PRE_COMPACT):
            trigger = "manual" if request.trigger == "manual" else "auto"
            await self.interceptors.pre_compact(trigger, request.focus)
        try:
            compaction = await self.host.compactor.compact(
                request,
                system=self.system_prompt,
                tools=self._client_tools(),
                model=self.model,
                max_tokens=self.max_tokens,
                thinking=self.host.thinking_plan,
            )
        except CompactionNotSmaller as exc:
            # The turn goes on with the history as it was: the request is no bigger for it.
            self.host.alert("warn", "compaction", str(exc))
            self.compaction_futile = True
            self.host.signal("compaction_committed")
            return None
        except CompactionError as exc:
            raise TurnError(f"compaction failed: {exc}", code="provider_error") from exc
        self.host.signal("compaction_committed")
        if (
            compaction is not None
            and self.interceptors.has(HookEvent.SESSION_START)
            # Notes after a paused server loop would stop its continuation (recovery only).
            and not awaits_continuation(self.host.history.items)
        ):
            for note in await self.interceptors.session_start("compact"):
                self.host.commit(note)
        return compaction

    def _client_tools(self) -> list[dict[str, Any]]:
        """The registry's tools as this pod's requests offer them (see WebPlan.client_tools)."""
        return self.host.web_plan.client_tools(self.tools.registry.specs())

    async def _run_tools(self, calls: list[ToolUseBlock]) -> None:
        await self.host.before_tools(calls)
        self.host.signal("tools_started")
        await self.tools.run_calls(calls, self.host.commit, self.host.signal)
        self.host.signal("round_done")

    async def _request(
        self, messages: list[dict[str, Any]] | None = None
    ) -> AssistantMessage | None:
        if messages is None:
            messages = await self.host.wire_messages()
        violations = self.validator.validate(messages)
        if violations:
            # Never send what the API would reject; this is our bug, so say so plainly.
            raise TurnError(
                "internal: history is not wire-valid: " + "; ".join(map(str, violations[:3])),
                code="internal",
            )
        # The API's server tools go after the client tools (the prompt cache's prefix); the
        # compaction's summary request never carries them (docs/web.md: a summary must not
        # search).
        tools = [*self._client_tools(), *self.host.web_plan.server_tools]
        plan = self.host.thinking_plan
        request = ProviderRequest(
            model=self.model,
            system=self.system_prompt,
            messages=messages,
            tools=tools,
            max_tokens=self.max_tokens,
            cache_ttl=self.cache_ttl,
            thinking=plan.thinking,
            output_config=plan.output_config,
        )
        try:
            if self.fallback is None:
                return await self._stream(self.provider, request)
            return await self.fallback.ask(
                request,
                self._stream,
                primary=self.provider,
                turn=self.host.history.turn,
                specs=self.tools.registry.specs(),
                context=self.host.context,
                alert=self.host.alert,
            )
        except PromptTooLongError:
            raise  # the turn compacts and tries again
        except ProviderError as exc:
            raise TurnError(str(exc), code="provider_error") from exc

    async def _stream(
        self, provider: Provider, request: ProviderRequest
    ) -> AssistantMessage | None:
        """Stream one response to clients and commit it; raises ProviderError."""
        emit = self.host.emit
        answered = None if provider is self.provider else provider.model
        async for event in provider.stream(request):
            if isinstance(event, TextDelta):
                emit("text_delta", TextData(text=event.text))
            elif isinstance(event, ToolCallArgsDelta):
                emit("tool_call_args_delta", ToolCallArgsDeltaData(id=event.id, json=event.json))
            elif isinstance(event, ToolCallStart):
                emit("tool_call_start", ToolCallStartData(id=event.id, name=event.name))
            elif isinstance(event, ThinkingDelta):
                emit("thinking_delta", ThinkingData(text=event.text))
            elif isinstance(event, (ServerToolCall, ServerToolResult, CitationDelta)):
                self._emit_server_tool(event)
            elif isinstance(event, ResponseComplete):
                emit("usage", UsageData(**asdict(event.usage)))
                return self._commit_response(event, answered)
        raise TurnError("the provider's stream ended without a complete response")

    def _emit_server_tool(self, event: ServerToolCall | ServerToolResult | CitationDelta) -> None:
        """Tell clients what the API's own tools are doing (they run on the API's side)."""
        if isinstance(event, ServerToolCall):
            data: ServerToolCallData | ServerToolResultData | CitationData = ServerToolCallData(
                id=event.id, name=event.name, input=event.input
            )
            self.host.emit("server_tool_call", data)
        elif isinstance(event, ServerToolResult):
            summary = summarize_result(event.block)
            sources = [SourceData(url=s.url, title=s.title) for s in summary.sources]
            data = ServerToolResultData(
                id=event.block.tool_use_id,
                name=summary.name,
                sources=sources,
                error_code=summary.error_code,
            )
            self.host.emit("server_tool_result", data)
        else:
            cited = cited_source(event.citation)
            data = CitationData(url=cited.url, title=cited.title, cited_text=cited.cited_text)
            self.host.emit("citation", data)

    def _commit_response(
        self, response: ResponseComplete, model: str | None = None
    ) -> AssistantMessage | None:
        # Nothing the API would refuse later is stored: one bad reply must not break the session.
        reply = normalize_reply(response.blocks, earlier_ids=self.host.history.tool_use_ids)
        for note in reply.alerts:
            self.host.alert("warn", "model", note)
        items = self.host.history.items
        blocks, notes = server_rules_kept(items, reply.blocks, self.host.history.tool_use_ids)
        for note in notes:
            self.host.alert("warn", "model", note)
        message = AssistantMessage(
            blocks=blocks, stop_reason=response.stop_reason, usage=response.usage, model=model
        )
        if not message.blocks:
            return None  # an empty response is not a message; the API would reject it later
        stored = self.host.commit(message)
        assert isinstance(stored, AssistantMessage)
        for answer in reply.answers:
            self.host.commit(answer)
        if stored.stop_reason != PAUSE_TURN and not stored.tool_uses:
            # Only a pause_turn or a mixed message may leave a server call open (the API goes
            # on with it); any other end closes it now, while it is the last content.
            closing = close_server_calls(items)
            if closing is not None:
                self.host.commit(closing)
        return stored
