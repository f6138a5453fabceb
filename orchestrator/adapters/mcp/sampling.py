"""Sampling: an MCP server asks for the pod's model (``sampling/createMessage``).

Declined unless the server's entry says ``sampling = "ask"``. Then a request that comes
during a call of one of the server's tools is put to a person as an approval, like a tool
call (``mcp__<server>__sampling``, kind ``other``, its messages as the arguments; a
``[permissions]`` rule that denies it, or read-only mode, declines it unasked); approved,
it goes to the pod's own provider and model, and what it cost is added to the session's and
the turn's usage (and so to the cost ``status`` shows). A request outside a call, with content
other than text and images, or denied, is declined with an error that says why.

An interrupt of the call (pause, cancel, shutdown) withdraws the approval request, or stops
the request to the model, like the call itself.

What is asked of the pod is only :class:`SamplingHost` (its approvals, provider, token limit,
spending and machine signal); the pod's controller is one, structurally: nothing here imports
it, so the adapters stay below the runtime.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from mcp import types

from orchestrator.adapters.providers.base import (
    ProviderError,
    ProviderRequest,
    ResponseComplete,
    StreamEvent,
)
from orchestrator.config.mcp import wire_name
from orchestrator.core.history import TextBlock, ToolUseBlock
from orchestrator.core.usage import TokenUsage

__all__ = [
    "DECLINED",
    "SAMPLING_KIND",
    "ApprovalDesk",
    "ApprovalLike",
    "ModelSource",
    "PodSampler",
    "SamplingDeclined",
    "SamplingHost",
    "SamplingLimits",
    "SamplingPolicy",
    "VerdictLike",
    "settle",
    "stop_reason",
    "wire_messages",
]

SAMPLING_KIND: Literal["other"] = "other"
"""The permission kind a sampling request is judged and asked as."""


class VerdictLike(Protocol):
    """The policy's verdict on one call."""

    @property
    def verdict(self) -> str:
        """``allow``, ``ask`` or ``deny``."""
        ...

    @property
    def reason(self) -> str:
        """Why, in words for people."""
        ...


class SamplingPolicy(Protocol):
    """The pod's permission rules, as far as a sampling request needs them."""

    def decide(self, tool: str, kind: Literal["other"], arguments: dict[str, Any]) -> VerdictLike:
        """The verdict for one call."""
        ...


class ApprovalLike(Protocol):
    """A person's answer to an approval request."""

    @property
    def allow(self) -> bool:
        """Approved."""
        ...

    @property
    def message(self) -> str:
        """What the person said with a denial (may be empty)."""
        ...


class ApprovalDesk(Protocol):
    """Where approval requests wait for a person (the runtime's ``Approvals``)."""

    @property
    def policy(self) -> SamplingPolicy:
        """The rules that decide before anyone is asked."""
        ...

    async def ask(
        self,
        call: ToolUseBlock,
        *,
        kind: Literal["other"],
        reason: str,
        diff: str | None,
        signal: Callable[[str], None],
    ) -> ApprovalLike:
        """Wait for a person's answer about ``call`` (cancellation withdraws the request)."""
        ...


class ModelSource(Protocol):
    """The pod's provider, as far as lending its model needs it."""

    @property
    def model(self) -> str:
        """The model requests go to."""
        ...

    def stream(self, request: ProviderRequest) -> AsyncIterator[StreamEvent]:
        """Stream one response; the last event is ``ResponseComplete``."""
        ...


class SamplingLimits(Protocol):
    """The part of the pod's config that bounds a sampling request."""

    @property
    def max_tokens(self) -> int:
        """The most output tokens one request of the pod may ask for."""
        ...


class SamplingHost(Protocol):
    """What :class:`PodSampler` needs of the pod: the pod's controller satisfies it."""

    @property
    def approvals(self) -> ApprovalDesk:
        """The pod's approval requests."""
        ...

    @property
    def provider(self) -> ModelSource:
        """The pod's own model."""
        ...

    @property
    def config(self) -> SamplingLimits:
        """The pod's config."""
        ...

    def spend(self, usage: TokenUsage, source: str) -> None:
        """Count tokens spent outside the conversation as the turn's (and keep them)."""
        ...

    def budget_refusal(self) -> str | None:
        """Why no request may be sent now (a budget is reached); None when one may."""
        ...

    def status_changed(self) -> None:
        """Tell the clients the status changed (the usage did)."""
        ...

    def signal(self, event: str) -> None:
        """Send the machine an event (``approval_needed``, ``approval_settled``)."""
        ...


DECLINED = -1
"""The error code the spec's examples use for a sampling request the client's user refused."""


class SamplingDeclined(Exception):
    """Why a sampling request is declined, in words for the server.

    A signal, not a failure: the decline is the answer the server gets (outside the error
    tree, as :class:`~orchestrator.adapters.mcp.elicitation.InputDeclined`)."""


def wire_messages(params: types.CreateMessageRequestParams) -> list[dict[str, Any]]:
    """The request's messages as Messages API messages (text and images); raises
    SamplingDeclined for content the pod does not send (audio, tool calls and results)."""
    out: list[dict[str, Any]] = []
    for message in params.messages:
        blocks = message.content if isinstance(message.content, list) else [message.content]
        content: list[dict[str, Any]] = []
        for block in blocks:
            if isinstance(block, types.TextContent):
                content.append({"type": "text", "text": block.text})
            elif isinstance(block, types.ImageContent):
                source = {"type": "base64", "media_type": block.mime_type, "data": block.data}
                content.append({"type": "image", "source": source})
            else:
                raise SamplingDeclined(f"its {block.type} content is not supported")
        out.append({"role": message.role, "content": content})
    return out


def stop_reason(reason: str) -> str:
    """The Messages API's stop reason in MCP's words."""
    return {"end_turn": "endTurn", "max_tokens": "maxTokens", "stop_sequence": "stopSequence"}.get(
        reason, reason
    )


@dataclass
class PodSampler:
    """Sampling through a person's approval to the pod's own provider."""

    pod: SamplingHost

    async def sample(
        self, server: str, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        """Ask a person, then the model; raises SamplingDeclined with why it is not done."""
        c = self.pod
        messages = wire_messages(params)
        arguments: dict[str, Any] = {"messages": messages, "max_tokens": params.max_tokens}
        if params.system_prompt:
            arguments["system_prompt"] = params.system_prompt
        call = ToolUseBlock(
            id=f"sampling_{secrets.token_hex(8)}",
            name=wire_name(server, "sampling"),
            input=arguments,
        )
        # Rules that deny (and read-only mode) hold; nothing lets it through unasked, not
        # even the server's permission = "allow": its tools' calls are not its model requests.
        verdict = c.approvals.policy.decide(call.name, SAMPLING_KIND, arguments)
        if verdict.verdict == "deny":
            raise SamplingDeclined(verdict.reason)
        over = c.budget_refusal()
        if over is not None:
            # A server's requests spend the pod's budget: none starts past it (a server that
            # asks again and again within one call would otherwise spend without end).
            raise SamplingDeclined(over)
        answer = await c.approvals.ask(
            call,
            kind=SAMPLING_KIND,
            reason=f"MCP server {server} asks the pod's model for an answer (sampling)",
            diff=None,
            signal=c.signal,
        )
        if not answer.allow:
            why = answer.message.strip() or "no reason given"
            raise SamplingDeclined(f"the user denied it: {why}")
        request = ProviderRequest(
            model=c.provider.model,
            system=params.system_prompt or "",
            messages=messages,
            max_tokens=min(params.max_tokens, c.config.max_tokens),
            cache_ttl=None,
        )
        final: ResponseComplete | None = None
        try:
            async for event in c.provider.stream(request):
                if isinstance(event, ResponseComplete):
                    final = event
        except ProviderError as exc:
            raise SamplingDeclined(f"the pod's model failed: {exc}") from exc
        if final is None:
            raise SamplingDeclined("the pod's model ended without an answer")
        # Spent by the pod's key like any request of the turn: counted as the turn's, and
        # kept in the session (no item carries it).
        c.spend(final.usage, f"sampling:{server}")
        c.status_changed()
        text = "".join(block.text for block in final.blocks if isinstance(block, TextBlock))
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=text),
            model=c.provider.model,
            stop_reason=stop_reason(final.stop_reason),
        )


async def settle(
    sampler: PodSampler | None,
    server: str,
    params: types.CreateMessageRequestParams,
    in_call: bool,
) -> types.CreateMessageResult | types.ErrorData:
    """The answer to one sampling request of a server whose entry says ``sampling = "ask"``."""
    try:
        if not in_call:
            raise SamplingDeclined("it came outside a call of the server's tools")
        if sampler is None:
            raise SamplingDeclined("nobody can be asked here (the servers run outside a pod)")
        return await sampler.sample(server, params)
    except SamplingDeclined as exc:
        return types.ErrorData(
            code=DECLINED,
            message=f"pod-orchestrator declined the sampling request of MCP server {server}: {exc}",
        )
