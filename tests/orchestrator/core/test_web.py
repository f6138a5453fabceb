"""The web plan: config x what the model and the platform can do -> what every turn request
declares, and why."""

from __future__ import annotations

from typing import Any

import pytest
from anthropic.types import ModelCapabilities

from orchestrator.core.web import FETCH_TOOL, SEARCH_TOOL, ModelWeb, WebPlan, plan_web

SEARCHES = ModelWeb("claude-x", web_search=True)
NO_SEARCH = ModelWeb("claude-old")
SCRIPTED = ModelWeb.no_server_tools("scripted-demo", "the scripted provider runs no server tools")
UNKNOWN = None


def plan(search: str, fetch: str, model: ModelWeb | None, **kwargs: Any) -> WebPlan:
    return plan_web(search, fetch, max_uses=kwargs.pop("max_uses", 8), model=model, **kwargs)  # type: ignore[arg-type]


# (search, fetch, model) -> (search on, fetch mode, words in search's why, words in fetch's why)
TABLE = [
    ("auto", "auto", SEARCHES, True, "server", "supports web search", "runs the API's web fetch"),
    ("auto", "auto", NO_SEARCH, False, "local", "does not support", "the pod fetches"),
    ("auto", "auto", SCRIPTED, False, "local", "scripted provider", "scripted provider"),
    ("auto", "auto", UNKNOWN, False, "local", "unknown", "unknown"),
    ("on", "auto", SEARCHES, True, "server", 'search = "on"', "runs the API's web fetch"),
    ("on", "server", NO_SEARCH, False, "off", "not honoured", "not honoured"),
    ("on", "server", SCRIPTED, False, "off", "scripted provider", "scripted provider"),
    ("on", "server", UNKNOWN, True, "server", "unknown", "unknown"),
    ("off", "auto", SEARCHES, False, "server", 'search = "off"', "runs the API's web fetch"),
    ("off", "off", SEARCHES, False, "off", 'search = "off"', 'fetch = "off"'),
    ("auto", "local", SEARCHES, True, "local", "supports web search", 'fetch = "local"'),
    ("auto", "local", UNKNOWN, False, "local", "unknown", 'fetch = "local"'),
    ("auto", "server", SEARCHES, True, "server", "supports", 'fetch = "server"'),
]


@pytest.mark.parametrize(("search", "fetch", "model", "on", "mode", "why_s", "why_f"), TABLE)
def test_the_plan_table(
    search: str, fetch: str, model: ModelWeb | None, on: bool, mode: str, why_s: str, why_f: str
) -> None:
    result = plan(search, fetch, model)
    assert (result.search, result.fetch) == (on, mode)
    assert why_s in result.search_why and why_f in result.fetch_why
    assert result.local_fetch == (mode == "local")
    # Exactly the tools the plan says are on are declared, search first.
    types = [tool["type"] for tool in result.server_tools]
    assert types == [SEARCH_TOOL] * on + [FETCH_TOOL] * (mode == "server")


def test_the_declared_tools_carry_max_uses_and_the_allow_list() -> None:
    result = plan("on", "server", SEARCHES, max_uses=3, allowed_domains=["docs.python.org"])
    assert list(result.server_tools) == [
        {
            "type": "web_search_20250305",
            "name": "web_search",
            "max_uses": 3,
            "allowed_domains": ["docs.python.org"],
        },
        {
            "type": "web_fetch_20250910",
            "name": "web_fetch",
            "max_uses": 3,
            "allowed_domains": ["docs.python.org"],
        },
    ]


def test_a_blocked_list_is_declared_and_never_beside_an_allow_list() -> None:
    blocked = plan("on", "auto", SEARCHES, blocked_domains=["x.org"])
    assert all(t["blocked_domains"] == ["x.org"] for t in blocked.server_tools)
    both = plan("on", "auto", SEARCHES, allowed_domains=["a.org"], blocked_domains=["x.org"])
    # The config refuses both at load; should both ever arrive, the narrower list wins.
    assert all("blocked_domains" not in t for t in both.server_tools)
    assert all(t["allowed_domains"] == ["a.org"] for t in both.server_tools)


def test_the_declared_params_are_the_sdks() -> None:
    # Every key a declared tool has is one the SDK's param type names.
    from anthropic.types import WebFetchTool20250910Param, WebSearchTool20250305Param

    tools = plan("on", "server", SEARCHES, blocked_domains=["x.org"]).server_tools
    assert set(tools[0]) <= set(WebSearchTool20250305Param.__annotations__)
    assert set(tools[1]) <= set(WebFetchTool20250910Param.__annotations__)


def _caps(*, server_tools: bool, web_search: bool) -> ModelCapabilities:
    """The Models API's JSON as the fake serves it, with the two flags set."""
    from conformance.models import ModelSpec

    data = ModelSpec(id="claude-x", thinking=frozenset({"disabled"})).capabilities()
    assert data is not None
    data["server_tools"]["supported"] = server_tools
    data["server_tools"]["web_search"] = {"supported": web_search}
    return ModelCapabilities.model_validate(data)


@pytest.mark.parametrize(
    ("server_tools", "web_search", "expected"),
    [(True, True, True), (True, False, False), (False, True, False), (False, False, False)],
)
def test_capabilities_from_the_models_api(
    server_tools: bool, web_search: bool, expected: bool
) -> None:
    caps = _caps(server_tools=server_tools, web_search=web_search)
    model = ModelWeb.from_capabilities("claude-x", caps)
    assert model.web_search is expected and model.platform is None


def test_the_summary_reads_for_people() -> None:
    assert plan("off", "local", SEARCHES).summary() == (
        'search off (config: search = "off") · fetch local (config: fetch = "local")'
    )
