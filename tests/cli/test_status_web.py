"""`pod status` says what the web resolved to and why, and counts searches beside the tokens
and in the cost."""

from __future__ import annotations

import json
from pathlib import Path

from orchestrator.config.model import PodConfig
from orchestrator.core.prices import Prices
from orchestrator.core.usage import TokenUsage
from orchestrator.core.web import ModelWeb, plan_web
from orchestrator.runtime.status import session_cost, status_text, web_data, web_line
from tests.cli.helpers import pod


def test_pod_status_prints_the_web_and_why(env: dict[str, str], workspace: Path) -> None:
    done = pod(env, "run", "hello", "--web", "on", "--workspace", str(workspace))
    assert done.returncode == 0, done.stderr
    shown = pod(env, "status", "--workspace", str(workspace))
    assert shown.returncode == 0, shown.stderr
    data = json.loads(pod(env, "status", "--workspace", str(workspace), "--json").stdout)
    # The scripted provider runs no server tools: --web on cannot be honoured, and says why;
    # fetching falls back to the pod's own tool.
    assert data["web"]["search"] == "off"
    assert data["web"]["fetch"] == "local"
    assert 'search = "on" is not honoured' in data["web"]["why"]["search"]
    assert "scripted provider runs no server tools" in data["web"]["why"]["search"]
    assert (
        f"web search off ({data['web']['why']['search']}) · fetch local "
        f"({data['web']['why']['fetch']})"
    ) in shown.stdout.splitlines()


def test_pod_status_with_the_web_off(env: dict[str, str], workspace: Path) -> None:
    done = pod(env, "run", "hello", "--web", "off", "--workspace", str(workspace))
    assert done.returncode == 0, done.stderr
    data = json.loads(pod(env, "status", "--workspace", str(workspace), "--json").stdout)
    assert data["web"] == {
        "search": "off",
        "fetch": "off",
        "why": {"search": 'config: search = "off"', "fetch": 'config: fetch = "off"'},
    }


def _data(**extra: object) -> dict[str, object]:
    return {
        "name": "p", "status": "idle", "state": "idle", "provider": "anthropic",
        "model": "claude-sonnet-4-6", "turn": 1, "workspace": "/w", "thinking": "adaptive",
        "sandbox": "off", **extra,
    }  # fmt: skip


def test_the_web_line_before_the_first_turn() -> None:
    assert "web not decided yet (the first turn asks the model)" in status_text(_data())


def test_the_web_line_from_a_plan() -> None:
    plan = plan_web("auto", "auto", max_uses=8, model=ModelWeb("claude-x", web_search=True))
    web = web_data(plan)
    assert web is not None
    line = web_line(web.model_dump())
    assert line == (
        "web search on (claude-x supports web search) · fetch server "
        "(claude-x runs the API's web fetch)"
    )
    assert line in status_text(_data(web=web.model_dump())).splitlines()


def test_searches_stand_beside_the_tokens_and_in_the_cost(tmp_path: Path) -> None:
    usage = TokenUsage(input_tokens=1_000, output_tokens=100, web_search_requests=3)
    text = status_text(_data(usage={"input_tokens": 1_000, "output_tokens": 100,
                                    "web_search_requests": 3, "web_fetch_requests": 1},
                             cost_usd=0.05))  # fmt: skip
    assert "tokens in 1,000 out 100 · 3 web searches · 1 web fetch · $0.0500" in text
    config = PodConfig(workspace=tmp_path)
    without = TokenUsage(input_tokens=1_000, output_tokens=100)
    # $10 per 1,000 searches, on top of the tokens.
    cost, base = (
        session_cost(config, "claude-sonnet-4-6", usage),
        session_cost(config, "claude-sonnet-4-6", without),
    )
    assert cost is not None and base is not None
    assert round(cost - base, 6) == 0.03


def test_the_search_price_is_configurable(tmp_path: Path) -> None:
    config = PodConfig(
        workspace=tmp_path,
        prices={"claude-sonnet-4": Prices(input=3.0, output=15.0, web_search_per_1k=25.0)},
    )
    searches = TokenUsage(web_search_requests=4, web_fetch_requests=10)
    # Fetches bill only their tokens (the published price), unless configured otherwise.
    assert session_cost(config, "claude-sonnet-4-6", searches) == 0.1
    billed = PodConfig(
        workspace=tmp_path,
        prices={"claude-sonnet-4": Prices(input=3.0, output=15.0, web_fetch_per_1k=1.0)},
    )
    assert session_cost(billed, "claude-sonnet-4-6", searches) == 0.05


def test_server_tool_counts_add_up_like_tokens() -> None:
    one = TokenUsage(input_tokens=5, web_search_requests=1, web_fetch_requests=2)
    two = TokenUsage(output_tokens=7, web_search_requests=3)
    assert one + two == TokenUsage(
        input_tokens=5, output_tokens=7, web_search_requests=4, web_fetch_requests=2
    )


def test_both_domain_lists_stop_the_start_with_one_line(
    env: dict[str, str], workspace: Path
) -> None:
    config = Path(env["XDG_CONFIG_HOME"]) / "pod" / "config.toml"
    config.write_text('[web]\nallowed_domains = ["a.org"]\nblocked_domains = ["b.org"]\n')
    done = pod(env, "run", "hello", "--workspace", str(workspace))
    assert done.returncode != 0
    said = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(said) == 1, done.stderr
    assert str(config) in said[0] and "keep one of the two lists" in said[0]
