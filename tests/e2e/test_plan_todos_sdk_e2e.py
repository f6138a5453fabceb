"""Plan mode, the todo list and the compaction contract over HTTP: the real anthropic SDK
against the project's fake Messages API (its real rules: every request validated, tokens
counted), driven through the pod's socket as a client would."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from conformance.fake_api import FakeAnthropic, Reply, ToolCall
from conformance.models import ModelSpec
from orchestrator.adapters.providers.anthropic import AnthropicProvider
from orchestrator.runtime.compaction import COMPACTION_PROMPT
from tests.e2e.harness import collect_until, running_pod

HEADER = COMPACTION_PROMPT.split("]")[0] + "]"
PROMPT = "Plan the port of parse.py, then list what is left"
TODOS = [
    {"content": "port parse", "status": "in_progress", "activeForm": "Porting parse"},
    {"content": "run tests", "status": "pending", "activeForm": "Running tests"},
]


def _is_summary(body: dict[str, Any]) -> bool:
    last = body["messages"][-1]["content"]
    return isinstance(last, list) and str(last[-1].get("text", "")).startswith(HEADER)


def _model(body: dict[str, Any]) -> Reply:
    """Writes its todos, tries an edit (plan mode refuses it), then answers; summarises."""
    if _is_summary(body):
        return Reply(text="Summary: planned the port; todos written.")
    results = [
        b
        for m in body["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]
    if not results:
        return Reply(tool_calls=[ToolCall("todo_write", {"todos": TODOS}, id="toolu_todo")])
    if len(results) == 1:
        edit = {"path": "parse.py", "content": "ported\n"}
        return Reply(tool_calls=[ToolCall("write_file", edit, id="toolu_edit")])
    return Reply(text="The plan: port parse, then run the tests.")


@pytest.fixture
async def fake() -> AsyncIterator[FakeAnthropic]:
    server = FakeAnthropic(models=[ModelSpec(id="fake-model", context_window=200_000)]).start()
    server.responder = _model
    try:
        yield server
    finally:
        server.stop()


async def test_plan_mode_todos_and_a_compaction_over_the_real_sdk(
    workspace: Path, short_dir: Path, fake: FakeAnthropic
) -> None:
    provider = AnthropicProvider(
        "fake-model", api_key="test-key", base_url=fake.base_url, retry_base_delay_s=0.01
    )
    permissions = {"mode": "plan"}
    async with running_pod(workspace, short_dir, provider=provider, permissions=permissions) as pod:
        c = await pod.client()
        await c.send("run", {"input": PROMPT})
        events = await collect_until(c, "run_end", timeout=60)
        assert events[-1].data == {"result": "finished"}
        # Plan mode: the edit did not run and nobody was asked.
        assert not [e for e in events if e.event == "approval_request"]
        assert not (workspace / "parse.py").exists()
        [todos] = [e.data for e in events if e.event == "todos"]
        assert [t["content"] for t in todos["todos"]] == ["port parse", "run tests"]
        status = (await c.request("get_status")).data
        assert status["permission_mode"] == "plan"
        assert [t["status"] for t in status["todos"]] == ["in_progress", "pending"]

        await c.send("compact")
        compacted = await collect_until(c, "compaction", timeout=60)
        assert compacted[-1].data["todos"] == 2
        await c.send("run", {"input": "go on"})
        events = await collect_until(c, "run_end", timeout=60)
        assert events[-1].data == {"result": "finished"}
        await c.close()
    await provider.aclose()

    requests = [r for r in fake.requests if r.path == "/v1/messages"]
    assert all(r.valid and r.status == 200 for r in requests), [r.error for r in requests]
    turn = [r.body for r in requests if not _is_summary(r.body)]
    # The edit's result told the model why (plan mode), over the wire.
    edit_result = next(
        b
        for m in turn[2]["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_result" and b["tool_use_id"] == "toolu_edit"
    )
    assert "plan mode" in json.dumps(edit_result)
    # After the compaction: the open todos and the earlier request, verbatim, after the summary.
    after = json.dumps(turn[-1]["messages"][0])
    assert "Summary: planned the port" in after
    assert "port parse" in after and "run tests" in after
    assert PROMPT in after
    # The tool list never changed across the turns (the cached prefix survives plan mode).
    assert len({json.dumps(body["tools"], sort_keys=True) for body in turn}) == 1
