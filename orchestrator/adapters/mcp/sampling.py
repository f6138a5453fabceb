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
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mcp import types

from orchestrator.adapters.mcp.config import wire_name
from orchestrator.adapters.providers.base import ProviderError, ProviderRequest, ResponseComplete
from orchestrator.core.history import TextBlock, ToolUseBlock

if TYPE_CHECKING:
    from orchestrator.runtime.controller import Controller

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

    controller: Controller

    async def sample(
        self, server: str, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        """Ask a person, then the model; raises SamplingDeclined with why it is not done."""
        c = self.controller
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
        verdict = c.approvals.policy.decide(call.name, "other", arguments)
        if verdict.verdict == "deny":
            raise SamplingDeclined(verdict.reason)
        answer = await c.approvals.ask(
            call,
            kind="other",
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
