"""The turn loop against a small host: rounds, limits, resumed calls, refusals, no prefill."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from orchestrator.adapters.providers.scripted import (
    ScriptedProvider,
    ScriptedReply,
    ScriptedToolCall,
)
from orchestrator.adapters.scoped_fs import ScopedFS
from orchestrator.capabilities.hooks.chain import InterceptorChain
from orchestrator.capabilities.tools.files import ReadFileTool
from orchestrator.capabilities.tools.registry import ToolRegistry
from orchestrator.config.model import PodConfig
from orchestrator.core.history import (
    AssistantMessage,
    History,
    Item,
    TextBlock,
    ToolResult,
    ToolUseBlock,
    UserMessage,
)
from orchestrator.core.thinking import ThinkingPlan
from orchestrator.core.validator import IncrementalValidator, validate_wire
from orchestrator.core.web import WebPlan
from orchestrator.runtime.compaction import CompactionRequest, Compactor
from orchestrator.runtime.context import Context
from orchestrator.runtime.tool_runner import ToolRunner
from orchestrator.runtime.turn import Turn, TurnError


class Host:
    """What the controller gives a turn: history, commit, events, round signals, wire,
    the context and its compactor."""

    def __init__(self, items: list[Item] | None = None, window: int = 200_000) -> None:
        self.history = History(items or [])
        self.events: list[str] = []
        self.alerts: list[str] = []
        self.signals: list[str] = []
        self.checkpointed_rounds = 0
        self.requested: CompactionRequest | None = None
        config = PodConfig(workspace=Path("/nonexistent"), context_window=window)
        self.context = Context(config=config, history=self.history)
        self.compactor: Compactor | None = None

    def take_compaction_request(self) -> CompactionRequest | None:
        request, self.requested = self.requested, None
        return request

    async def learn_window(self) -> None:
        return None

    def commit(self, item: Item) -> Item:
        return self.history.append(item)

    def emit(self, event: str, data: BaseModel | dict[str, Any]) -> None:
        self.events.append(event)

    def signal(self, event: str) -> None:
        self.signals.append(event)

    async def before_tools(self, calls: list[Any]) -> None:
        self.checkpointed_rounds += 1

    def alert(self, level: str, source: str, message: str) -> None:
        self.alerts.append(message)

    async def wire_messages(self) -> list[dict[str, Any]]:
        return self.context.messages()

    thinking_plan = ThinkingPlan()
    web_plan = WebPlan()


def _turn(host: Host, workspace: Path, replies: list[ScriptedReply], max_rounds: int = 10) -> Turn:
    chain = InterceptorChain()
    provider = ScriptedProvider(replies=replies)
    host.compactor = Compactor(
        config=host.context.config,
        context=host.context,
        provider=provider,
        fs=ScopedFS(workspace),
        commit=host.commit,
    )
    return Turn(
        host=host,  # type: ignore[arg-type]
        provider=provider,
        tools=ToolRunner(
            registry=ToolRegistry([ReadFileTool()]),
            fs=ScopedFS(workspace),
            workspace=workspace,
            scratch_dir=workspace / ".pod",
            cap_for=lambda name: 10_000,
            interceptors=chain,
        ),
        interceptors=chain,
        system_prompt="sys",
        model="m",
        max_tokens=100,
        max_rounds=max_rounds,
        validator=IncrementalValidator(),
    )


def _started(text: str = "go") -> Host:
    host = Host()
    host.history.new_turn()
    host.commit(UserMessage(text=text))
    return host


READ = ScriptedReply(tool_calls=[ScriptedToolCall(name="read_file", input={"path": "README.md"})])


async def test_rounds_run_tools_until_the_model_ends_the_turn(workspace: Path) -> None:
    host = _started()
    result = await _turn(host, workspace, [READ, ScriptedReply(text="done")]).run()
    assert result == "finished"
    assert [i.kind for i in host.history.items] == [
        "user_message", "assistant", "tool_result", "assistant",
    ]  # fmt: skip
    assert host.signals == ["tools_started", "round_done"]
    assert host.checkpointed_rounds == 1  # the host is asked before the round's tools run


async def test_the_round_limit_ends_the_turn(workspace: Path) -> None:
    host = _started()
    assert await _turn(host, workspace, [READ, READ, READ], max_rounds=2).run() == "limit_reached"
    assert sum(1 for i in host.history.items if i.kind == "assistant") == 2


async def test_a_resumed_turn_runs_never_started_calls_before_asking_again(
    workspace: Path,
) -> None:
    host = _started()
    host.commit(
        AssistantMessage(
            blocks=[ToolUseBlock(id="toolu_a", name="read_file", input={"path": "README.md"})]
        )
    )
    turn = _turn(host, workspace, [ScriptedReply(text="after")])
    assert await turn.run() == "finished"
    results = [i for i in host.history.items if isinstance(i, ToolResult)]
    assert [r.call_id for r in results] == ["toolu_a"]
    assert len(turn.provider.requests) == 1  # type: ignore[attr-defined]


async def test_an_answered_turn_is_never_asked_again(workspace: Path) -> None:
    host = _started()
    host.commit(AssistantMessage(blocks=[TextBlock(text="already answered")]))
    turn = _turn(host, workspace, [ScriptedReply(text="never")])
    assert await turn.run() == "finished"
    assert turn.provider.requests == []  # type: ignore[attr-defined]


async def test_a_repeated_tool_use_id_gets_a_fresh_one_and_the_turn_goes_on(
    workspace: Path,
) -> None:
    host = _started()
    repeat = ScriptedToolCall(name="read_file", input={"path": "README.md"}, id="toolu_same")
    replies = [
        ScriptedReply(tool_calls=[repeat]),
        ScriptedReply(tool_calls=[repeat]),
        ScriptedReply(text="done"),
    ]
    assert await _turn(host, workspace, replies).run() == "finished"
    calls = [
        c.id for i in host.history.items if isinstance(i, AssistantMessage) for c in i.tool_uses
    ]
    assert calls[0] == "toolu_same" and len(set(calls)) == 2
    results = [i.call_id for i in host.history.items if isinstance(i, ToolResult)]
    assert results == calls
    assert any("toolu_same" in message for message in host.alerts)
    assert not validate_wire(host.context.messages(), allow_prefill=True)


async def test_a_reply_with_duplicate_ids_bad_names_and_surrogates_is_committed_valid(
    workspace: Path,
) -> None:
    host = _started()
    read = {"path": "README.md"}
    bad = ScriptedReply(
        text="text with a lone \ud800 surrogate",
        tool_calls=[
            ScriptedToolCall(name="read_file", input=read, id="toolu_dup"),
            ScriptedToolCall(name="read_file", input=read, id="toolu_dup"),
            ScriptedToolCall(name="y" * 200, input={"q": "\udfff"}, id="toolu_long"),
        ],
    )
    turn = _turn(host, workspace, [bad, ScriptedReply(text="done")])
    assert await turn.run() == "finished"
    assert not validate_wire(host.context.messages(), allow_prefill=True)
    # The provider got a valid second request (it checks, as the API does).
    assert len(turn.provider.requests) == 2  # type: ignore[attr-defined]
    message = next(i for i in host.history.items if isinstance(i, AssistantMessage))
    assert message.blocks[0] == TextBlock(text="text with a lone \ufffd surrogate")
    ids = [c.id for c in message.tool_uses]
    assert len(set(ids)) == 3
    results = {i.call_id: i for i in host.history.items if isinstance(i, ToolResult)}
    assert set(results) == set(ids)  # every call answered, once
    assert results["toolu_long"].is_error and "not run" in results["toolu_long"].summary
    assert not results[ids[1]].is_error  # the duplicate ran under its fresh id
    assert len(host.alerts) == 3


async def test_a_provider_failure_is_a_turn_error(workspace: Path) -> None:
    host = _started()
    failing = ScriptedReply(error="boom", error_kind="rejected")
    with pytest.raises(TurnError, match="boom") as caught:
        await _turn(host, workspace, [failing]).run()
    assert caught.value.code == "provider_error"
    assert [i.kind for i in host.history.items] == ["user_message"]  # nothing partial committed
