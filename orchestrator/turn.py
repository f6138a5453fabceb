"""The turn loop: request → stream → commit → tools → next round.

A turn runs as one asyncio task owned by the controller. It never touches the lifecycle
machine's state directly: it reports round boundaries through ``host.signal`` and ends by
returning a :class:`TurnResult` or raising (``CancelledError`` for an interrupt,
:class:`TurnError` for a failure). A partial stream is never committed; an assistant message
is committed whole, then its tool results one by one.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal, Protocol

from pydantic import BaseModel

from orchestrator.errors import PodRuntimeError
from orchestrator.history import AssistantMessage, History, Item, ToolUseBlock
from orchestrator.interceptors import ContinueWithMessages, InterceptorChain, Pause
from orchestrator.protocol import (
    TextData,
    ThinkingData,
    ToolCallArgsDeltaData,
    ToolCallStartData,
    UsageData,
)
from orchestrator.providers.base import (
    Provider,
    ProviderError,
    ProviderRequest,
    ResponseComplete,
    TextDelta,
    ThinkingDelta,
    ToolCallArgsDelta,
    ToolCallStart,
)
from orchestrator.repair import pending_tool_calls
from orchestrator.tool_runner import ToolRunner, ToolsPaused
from orchestrator.validator import IncrementalValidator

TurnResult = Literal["finished", "limit_reached", "paused"]


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

    def signal(self, event: str) -> None:
        """Send a round event (``tools_started`` / ``round_done``) to the lifecycle machine."""
        ...

    def wire_messages(self) -> list[dict[str, Any]]:
        """The wire messages for the next request (pruned, incrementally built)."""
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
    rounds: int = 0

    async def run(self) -> TurnResult:
        """Run rounds until the model ends the turn, a limit, or an interceptor's pause."""
        try:
            return await self._rounds()
        except ToolsPaused:  # a pre-tool interceptor said Pause; the calls stay pending
            return "paused"

    async def _rounds(self) -> TurnResult:
        items = self.host.history.items
        while True:
            pending = pending_tool_calls(items)
            if pending:
                # A resumed turn (or an interceptor pause) left calls that never started.
                await self._run_tools(pending)
            elif items and isinstance(items[-1], AssistantMessage):
                # The model had already answered when the pod stopped (a crash between the
                # commit and turn_end): the turn is over, asking again would be a prefill.
                return self._turn_end_action() or "finished"
            if self.rounds >= self.max_rounds:
                return "limit_reached"
            message = await self._request()
            self.rounds += 1
            if message is not None and message.tool_uses:
                await self._run_tools(message.tool_uses)
                continue
            verdict = self._turn_end_action()
            if verdict is not None:
                return verdict

    def _turn_end_action(self) -> TurnResult | None:
        """Ask the turn-end interceptors; None means run another round."""
        action = self.interceptors.turn_end(self.host.history.items)
        if isinstance(action, Pause):
            return "paused"
        if isinstance(action, ContinueWithMessages):
            for item in action.items:
                self.host.commit(item)
            return None
        return "finished"

    async def _run_tools(self, calls: list[ToolUseBlock]) -> None:
        self.host.signal("tools_started")
        await self.tools.run_calls(calls, self.host.commit)
        self.host.signal("round_done")

    async def _request(self) -> AssistantMessage | None:
        messages = self.host.wire_messages()
        violations = self.validator.validate(messages)
        if violations:
            # Never send what the API would reject; this is our bug, so say so plainly.
            raise TurnError(
                "internal: history is not wire-valid: " + "; ".join(map(str, violations[:3])),
                code="internal",
            )
        tools = self.tools.registry.specs()
        request = ProviderRequest(
            model=self.model,
            system=self.system_prompt,
            messages=messages,
            tools=tools,
            max_tokens=self.max_tokens,
        )
        emit = self.host.emit
        try:
            async for event in self.provider.stream(request):
                if isinstance(event, TextDelta):
                    emit("text_delta", TextData(text=event.text))
                elif isinstance(event, ToolCallArgsDelta):
                    emit(
                        "tool_call_args_delta", ToolCallArgsDeltaData(id=event.id, json=event.json)
                    )
                elif isinstance(event, ToolCallStart):
                    emit("tool_call_start", ToolCallStartData(id=event.id, name=event.name))
                elif isinstance(event, ThinkingDelta):
                    emit("thinking_delta", ThinkingData(text=event.text))
                elif isinstance(event, ResponseComplete):
                    emit("usage", UsageData(**asdict(event.usage)))
                    return self._commit_response(event)
        except ProviderError as exc:
            raise TurnError(str(exc), code="provider_error") from exc
        raise TurnError("the provider's stream ended without a complete response")

    def _commit_response(self, response: ResponseComplete) -> AssistantMessage | None:
        message = AssistantMessage(
            blocks=list(response.blocks), stop_reason=response.stop_reason, usage=response.usage
        )
        if not message.blocks:
            return None  # an empty response is not a message; the API would reject it later
        repeated = [c.id for c in message.tool_uses if c.id in self.host.history.tool_use_ids]
        if repeated:
            # Committing it would make every later request invalid; refuse this response.
            raise TurnError(f"the provider repeated tool_use id {', '.join(repeated)}")
        stored = self.host.commit(message)
        assert isinstance(stored, AssistantMessage)
        return stored
