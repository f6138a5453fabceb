"""The MCP adapters ask the pod only through small Protocols (``InputHost``, ``SamplingHost``):
plain objects that are no Controller drive the asking and sampling paths, and importing the
adapters loads nothing of the runtime or the serving layer."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from mcp import types

from orchestrator.adapters.mcp.asking import ServerAsking
from orchestrator.adapters.mcp.elicitation import InputHost, PodAsker
from orchestrator.adapters.mcp.sampling import PodSampler, SamplingHost
from orchestrator.adapters.providers.base import ProviderRequest, ResponseComplete, StreamEvent
from orchestrator.core.history import TextBlock, ToolUseBlock
from orchestrator.core.usage import TokenUsage
from orchestrator.protocol import ElicitationRequestData

Signal = Callable[[str], None]


@dataclass
class Verdict:
    verdict: str
    reason: str = ""


@dataclass
class Rules:
    verdict: str
    judged: list[tuple[str, str]] = field(default_factory=list)

    def decide(self, tool: str, kind: Literal["other"], arguments: dict[str, Any]) -> Verdict:
        self.judged.append((tool, kind))
        return Verdict(self.verdict, "a rule denies it" if self.verdict == "deny" else "")


@dataclass
class Reply:
    allow: bool
    message: str = ""


@dataclass
class Desk:
    policy: Rules
    allow: bool = True
    asked: list[tuple[ToolUseBlock, str, str, Signal]] = field(default_factory=list)

    async def ask(
        self,
        call: ToolUseBlock,
        *,
        kind: Literal["other"],
        reason: str,
        diff: str | None,
        signal: Signal,
    ) -> Reply:
        self.asked.append((call, kind, reason, signal))
        return Reply(allow=self.allow)


@dataclass
class Model:
    model: str = "plain-model"
    requests: list[ProviderRequest] = field(default_factory=list)

    async def stream(self, request: ProviderRequest) -> AsyncIterator[StreamEvent]:
        self.requests.append(request)
        yield ResponseComplete(
            blocks=[TextBlock(text="a plain answer")],
            stop_reason="end_turn",
            usage=TokenUsage(input_tokens=7, output_tokens=3),
        )


@dataclass
class Limits:
    max_tokens: int = 20


@dataclass
class PlainSamplingHost:
    """Everything PodSampler needs, and nothing of a pod."""

    approvals: Desk
    provider: Model = field(default_factory=Model)
    config: Limits = field(default_factory=Limits)
    spent: list[tuple[TokenUsage, str]] = field(default_factory=list)
    changes: int = 0
    events: list[str] = field(default_factory=list)
    over_budget: str | None = None
    """Why the pod's budget stops requests (None: it does not)."""

    def spend(self, usage: TokenUsage, source: str) -> None:
        self.spent.append((usage, source))

    def budget_refusal(self) -> str | None:
        return self.over_budget

    def status_changed(self) -> None:
        self.changes += 1

    def signal(self, event: str) -> None:
        self.events.append(event)


@dataclass
class Answer:
    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = None


@dataclass
class InputDeskOf:
    asked: list[tuple[ElicitationRequestData, Signal]] = field(default_factory=list)

    async def ask(self, data: ElicitationRequestData, *, signal: Signal) -> Answer:
        self.asked.append((data, signal))
        return Answer("accept", {"name": "Ada"})


@dataclass
class PlainInputHost:
    """Everything PodAsker needs, and nothing of a pod."""

    state_id: str
    elicitations: InputDeskOf = field(default_factory=InputDeskOf)
    events: list[str] = field(default_factory=list)

    def signal(self, event: str) -> None:
        self.events.append(event)


def sampling_request() -> types.CreateMessageRequestParams:
    text = types.TextContent(type="text", text="Summarise this.")
    return types.CreateMessageRequestParams(
        messages=[types.SamplingMessage(role="user", content=text)],
        max_tokens=50,
        system_prompt="Be brief.",
    )


def input_request() -> types.ElicitRequestFormParams:
    schema = {"type": "object", "properties": {"name": {"type": "string"}}}
    return types.ElicitRequestFormParams(message="Your name?", requested_schema=schema)


async def test_a_plain_sampling_host_lends_its_model_through_a_person_s_approval() -> None:
    host = PlainSamplingHost(approvals=Desk(policy=Rules("ask")))
    typed: SamplingHost = host  # what the adapter asks for, nothing more
    asking = ServerAsking(server="srv", alert=lambda level, message: None)
    asking.sampler = PodSampler(typed)
    with asking.in_request():
        result = await asking.ask_model(sampling_request())
    assert isinstance(result, types.CreateMessageResult), result
    assert isinstance(result.content, types.TextContent)
    assert (result.content.text, result.model, result.stop_reason) == (
        "a plain answer",
        "plain-model",
        "endTurn",
    )
    [(call, kind, reason, signal)] = host.approvals.asked
    assert (call.name, kind) == ("mcp__srv__sampling", "other")
    assert call.input["system_prompt"] == "Be brief."
    assert "MCP server srv asks the pod's model" in reason
    signal("approval_needed")
    assert host.events == ["approval_needed"]  # the machine's signal is the host's own
    [request] = host.provider.requests
    assert (request.model, request.system, request.max_tokens) == ("plain-model", "Be brief.", 20)
    assert host.spent == [(TokenUsage(input_tokens=7, output_tokens=3), "sampling:srv")]
    assert host.changes == 1


async def test_a_plain_sampling_host_whose_rules_deny_is_not_asked_and_spends_nothing() -> None:
    host = PlainSamplingHost(approvals=Desk(policy=Rules("deny")))
    asking = ServerAsking(server="srv", alert=lambda level, message: None)
    asking.sampler = PodSampler(host)
    with asking.in_request():
        result = await asking.ask_model(sampling_request())
    assert isinstance(result, types.ErrorData)
    assert result.message.endswith("MCP server srv: a rule denies it")
    assert host.approvals.policy.judged == [("mcp__srv__sampling", "other")]
    assert (host.approvals.asked, host.provider.requests, host.spent) == ([], [], [])


async def test_a_sampling_request_past_the_budget_is_declined_before_anyone_is_asked() -> None:
    host = PlainSamplingHost(
        approvals=Desk(policy=Rules("ask")), over_budget="the pod's budget is reached"
    )
    asking = ServerAsking(server="srv", alert=lambda level, message: None)
    asking.sampler = PodSampler(host)
    with asking.in_request():
        result = await asking.ask_model(sampling_request())
    assert isinstance(result, types.ErrorData)
    assert "the pod's budget is reached" in result.message
    assert (host.approvals.asked, host.provider.requests, host.spent) == ([], [], [])


async def test_a_plain_input_host_puts_a_request_for_input_to_its_desk() -> None:
    host = PlainInputHost(state_id="executing_tools")
    typed: InputHost = host
    asking = ServerAsking(server="srv", alert=lambda level, message: None)
    asking.asker = PodAsker(typed)
    with asking.calling("lookup"), asking.in_request():
        result = await asking.ask_person(input_request())
    assert (result.action, result.content) == ("accept", {"name": "Ada"})
    [(data, signal)] = host.elicitations.asked
    assert (data.server, data.message, data.tool, data.mode) == (
        "srv",
        "Your name?",
        "mcp__srv__lookup",
        "form",
    )
    signal("input_needed")
    assert host.events == ["input_needed"]


async def test_a_plain_input_host_that_runs_no_tool_is_not_asked() -> None:
    host = PlainInputHost(state_id="idle")
    alerts: list[tuple[str, str]] = []
    asking = ServerAsking(
        server="srv", alert=lambda level, message: alerts.append((level, message))
    )
    asking.asker = PodAsker(host)
    with asking.in_request():
        result = await asking.ask_person(input_request())
    assert result.action == "decline"
    assert host.elicitations.asked == []
    [(level, message)] = alerts
    assert level == "info" and "while the pod was idle, not running a tool" in message


def test_the_mcp_adapters_load_nothing_of_the_runtime_or_the_serving_layer() -> None:
    code = (
        "import sys\n"
        "import orchestrator.adapters.mcp.servers, orchestrator.adapters.mcp.resources\n"
        "import orchestrator.adapters.mcp.sampling, orchestrator.adapters.mcp.elicitation\n"
        "print(sorted(m for m in sys.modules\n"
        "             if m.startswith(('orchestrator.runtime', 'orchestrator.serving'))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "[]"
