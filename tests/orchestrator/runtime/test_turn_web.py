"""A turn's requests carry the web plan's server tools after the client tools, and the
context's estimate (when to compact) counts them (the summary request's: in
tests/e2e/test_web_config_e2e.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from orchestrator.adapters.providers.scripted import ScriptedReply
from orchestrator.core.web import ModelWeb, plan_web
from tests.orchestrator.runtime.test_turn import READ, _started, _turn

PLAN = plan_web(
    "on", "server", max_uses=2, allowed_domains=["docs.python.org"],
    model=ModelWeb("m", web_search=True),
)  # fmt: skip


async def test_requests_declare_the_server_tools_and_the_estimate_counts_them(
    workspace: Path,
) -> None:
    host = _started()
    host.web_plan = PLAN
    estimated: list[list[dict[str, Any]]] = []
    estimate = host.context.estimate

    def recording(system: str, tools: list[dict[str, Any]], messages: list[Any]) -> int:
        estimated.append(tools)
        return estimate(system, tools, messages)

    host.context.estimate = recording  # type: ignore[method-assign]
    turn = _turn(host, workspace, [READ, ScriptedReply(text="done")])
    assert await turn.run() == "finished"
    requests = turn.provider.requests  # type: ignore[attr-defined]
    assert len(requests) == 2
    for request in requests:
        assert [t["name"] for t in request.tools] == ["read_file", "web_search", "web_fetch"]
        assert request.tools[1:] == list(PLAN.server_tools)
    assert estimated and all(tools[1:] == list(PLAN.server_tools) for tools in estimated)
