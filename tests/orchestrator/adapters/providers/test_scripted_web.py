"""The scripted provider's server tools: scripted calls, the calls it runs on its own, and
the stand-in encrypted fields it checks when they come back."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from orchestrator.adapters.providers.base import (
    CitationDelta,
    ProviderRejectedError,
    ProviderRequest,
    ResponseComplete,
    ServerToolCall,
    ServerToolResult,
)
from orchestrator.adapters.providers.scripted import Script, ScriptedProvider, ScriptedReply
from orchestrator.adapters.providers.scripted_web import ScriptedCitation, ScriptedServerCall
from orchestrator.core.history import AssistantMessage
from orchestrator.core.wire import assistant_blocks


def _request(messages: list[dict[str, Any]]) -> ProviderRequest:
    return ProviderRequest(model="m", system="", messages=messages, tools=[])


async def _complete(provider: ScriptedProvider, messages: list[dict[str, Any]]) -> list[Any]:
    return [event async for event in provider.stream(_request(messages))]


USER = {"role": "user", "content": [{"type": "text", "text": "find"}]}


async def test_a_scripted_search_streams_the_call_its_result_and_citations() -> None:
    reply = ScriptedReply(
        text="It is there.",
        server_calls=[ScriptedServerCall(input={"query": "q"})],
        citations=[ScriptedCitation(url="https://example.com/", cited_text="there")],
    )
    events = await _complete(ScriptedProvider(replies=[reply]), [USER])
    kinds = [type(e) for e in events]
    assert kinds.index(ServerToolCall) < kinds.index(ServerToolResult) < kinds.index(CitationDelta)
    done = events[-1]
    assert isinstance(done, ResponseComplete)
    assert done.stop_reason == "end_turn" and done.usage.web_search_requests == 1
    [call, result, text] = done.blocks
    assert call.type == "server_tool_use" and call.id.startswith("srvtoolu_")
    assert result.type == "web_search_tool_result"
    assert text.citations[0]["encrypted_index"].startswith("scripted-enc-")  # type: ignore[union-attr,index]


async def test_it_runs_an_open_call_first_and_refuses_tampered_content() -> None:
    paused = ScriptedReply(
        server_calls=[ScriptedServerCall(result="none")], stop_reason="pause_turn"
    )
    provider = ScriptedProvider(replies=[paused, ScriptedReply(text="done")])
    first = (await _complete(provider, [USER]))[-1]
    assert first.stop_reason == "pause_turn"
    content = assistant_blocks(AssistantMessage(blocks=first.blocks))
    continued = (await _complete(provider, [USER, {"role": "assistant", "content": content}]))[-1]
    assert continued.blocks[0].type == "web_search_tool_result"  # the API ran it, first
    assert continued.usage.web_search_requests == 1
    whole = content + assistant_blocks(AssistantMessage(blocks=continued.blocks))
    sent: list[dict[str, Any]] = [USER, {"role": "assistant", "content": whole}, USER]
    provider.replies = [ScriptedReply(text="ok"), ScriptedReply(text="never")]
    await _complete(provider, copy.deepcopy(sent))  # intact: taken
    sent[1]["content"][1]["content"][0]["encrypted_content"] = "scripted-enc-forged"
    with pytest.raises(ProviderRejectedError, match="encrypted_content"):
        await _complete(provider, sent)


def test_the_documented_search_loop_script_is_valid() -> None:
    doc = (Path(__file__).parents[4] / "docs" / "scripted-provider.md").read_text()
    [example] = [
        block for block in re.findall(r"```json\n(.*?)```", doc, re.S) if "pause_turn" in block
    ]
    script = Script.model_validate(json.loads(example))
    assert [r.stop_reason for r in script.replies] == ["pause_turn", "pause_turn", None]
