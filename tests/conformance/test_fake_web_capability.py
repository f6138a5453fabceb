"""The fake API's part in the web configuration: a model's Models API entry says whether it
searches, and a request declaring the API's web tools (no ``input_schema``) is taken, while a
client tool without one is still refused."""

from __future__ import annotations

from typing import Any

import anthropic
import pytest

from conformance.fake_api import FakeAnthropic, Reply
from conformance.models import DEFAULT_MODELS, ModelSpec

SEARCHER = ModelSpec(id="searcher", thinking=frozenset({"disabled"}), web_search=True)
HELLO: list[Any] = [{"role": "user", "content": "hello"}]


@pytest.fixture
def api() -> FakeAnthropic:
    return FakeAnthropic(models=[*DEFAULT_MODELS, SEARCHER])


def test_the_models_api_says_which_model_searches(api: FakeAnthropic) -> None:
    with api:
        client = anthropic.Anthropic(api_key="k", base_url=api.base_url, max_retries=0)
        searcher = client.models.retrieve("searcher").capabilities
        plain = client.models.retrieve("claude-sonnet-4-6").capabilities
    assert searcher is not None and plain is not None
    assert searcher.server_tools.supported and searcher.server_tools.web_search.supported
    assert not plain.server_tools.web_search.supported


def test_declared_web_tools_are_taken_and_a_schemaless_client_tool_is_not(
    api: FakeAnthropic,
) -> None:
    web: list[Any] = [
        {"type": "web_search_20250305", "name": "web_search", "max_uses": 2},
        {"type": "web_fetch_20250910", "name": "web_fetch", "blocked_domains": ["x.org"]},
    ]
    with api:
        client = anthropic.Anthropic(api_key="k", base_url=api.base_url, max_retries=0)
        api.push(Reply(text="ok"))
        answer = client.messages.create(
            model="searcher",
            max_tokens=100,
            messages=HELLO,
            tools=web,
        )
        assert answer.content[0].type == "text"
        unknown: list[Any] = [{"type": "web_search_29990101", "name": "web_search"}]
        with pytest.raises(anthropic.BadRequestError, match="input_schema"):
            client.messages.create(
                model="searcher",
                max_tokens=100,
                messages=HELLO,
                tools=unknown,
            )
