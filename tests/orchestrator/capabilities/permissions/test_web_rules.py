"""web_fetch's permissions: a read, except that a domain not yet allowed asks; domain rules
in both spellings; "always" allows that domain only; deny wins; only a configured exact-host
allow lets a host resolve privately."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from orchestrator.adapters.session.records import GrantRecord
from orchestrator.capabilities.permissions import Policy
from orchestrator.capabilities.permissions.approvals import Answer, Approvals, describe
from orchestrator.capabilities.permissions.web import names_host_exactly
from orchestrator.config.permissions import PermissionsConfig
from orchestrator.core.history import ToolUseBlock


def policy(**table: Any) -> Policy:
    return Policy.from_config(PermissionsConfig.model_validate(table))


def verdict(p: Policy, url: str) -> str:
    return p.decide("web_fetch", "read", {"url": url}).verdict


@pytest.mark.parametrize("mode", ["default", "accept-edits", "read-only"])
def test_a_new_domain_asks_in_every_mode_but_yolo(mode: str) -> None:
    p = policy(mode=mode)
    decision = p.decide("web_fetch", "read", {"url": "https://docs.python.org/3/"})
    assert decision.verdict == "ask"
    assert "docs.python.org" in decision.reason
    assert p.offered("web_fetch", "read")  # read-only (Claude Code's plan) offers it


def test_yolo_fetches_from_any_domain_but_a_denied_one() -> None:
    p = policy(mode="yolo", deny=["web_fetch(domain:*.evil.example)"])
    assert verdict(p, "https://docs.python.org/") == "allow"
    assert verdict(p, "https://a.evil.example/") == "deny"


@pytest.mark.parametrize(
    "rule", ["web_fetch(domain:docs.python.org)", "WebFetch(domain:docs.python.org)"]
)
def test_an_allow_rule_in_either_spelling_allows_that_domain_only(rule: str) -> None:
    p = policy(allow=[rule])
    assert verdict(p, "https://docs.python.org/3/library/") == "allow"
    assert verdict(p, "https://DOCS.python.org./x") == "allow"
    assert verdict(p, "https://python.org/") == "ask"
    assert verdict(p, "https://docs.python.org.evil.example/") == "ask"


def test_wildcard_rules_cover_the_names_below() -> None:
    p = policy(allow=["WebFetch(domain:*.python.org)"])
    assert verdict(p, "https://docs.python.org/") == "allow"
    assert verdict(p, "https://python.org/") == "ask"


def test_deny_beats_allow_and_ask_rules_ask_in_yolo() -> None:
    p = policy(
        mode="yolo",
        allow=["web_fetch(domain:*.example.com)"],
        deny=["WebFetch(domain:secret.example.com)"],
        ask=["web_fetch(domain:pay.example.com)"],
    )
    assert verdict(p, "https://secret.example.com/") == "deny"
    assert verdict(p, "https://www.example.com/") == "allow"
    # allow rules come before ask rules (as for every tool): this one is allowed by *.
    assert verdict(p, "https://pay.example.com/") == "allow"
    assert (
        verdict(
            policy(mode="yolo", ask=["web_fetch(domain:pay.example.com)"]),
            "https://pay.example.com/",
        )
        == "ask"
    )


def test_file_rules_neither_allow_nor_deny_domains_but_a_bare_read_deny_does() -> None:
    assert verdict(policy(allow=["read"]), "https://docs.python.org/") == "ask"
    assert verdict(policy(deny=["read(.env)"]), "https://docs.python.org/") == "ask"
    p = policy(deny=["read"])
    assert verdict(p, "https://docs.python.org/") == "deny"
    assert not p.offered("web_fetch", "read")
    assert not policy(deny=["web_fetch"]).offered("web_fetch", "read")


def test_a_rule_without_a_domain_is_a_config_error() -> None:
    with pytest.raises(ValidationError, match=r"web_fetch\(domain:docs.python.org\)"):
        PermissionsConfig.model_validate({"allow": ["web_fetch(docs.python.org)"]})
    with pytest.raises(ValidationError, match="a \\* may only begin a domain"):
        PermissionsConfig.model_validate({"deny": ["WebFetch(domain:py*.org)"]})


def test_always_allows_that_domain_for_the_session_and_survives_a_reload() -> None:
    p = policy()
    rule = p.grant("web_fetch", {"url": "https://docs.python.org/3/"})
    assert str(rule) == "web_fetch(domain:docs.python.org)"
    assert verdict(p, "https://docs.python.org/other") == "allow"
    assert verdict(p, "https://sub.docs.python.org/") == "ask"
    assert verdict(p, "https://python.org/") == "ask"
    # The session records the rule; a pod that loads it grants it again.
    record = GrantRecord(tool=rule.tool, command=rule.subject, call_id="c1")
    reloaded = policy()
    reloaded.grant(record.tool, record.arguments())
    assert verdict(reloaded, "https://docs.python.org/x") == "allow"
    assert verdict(reloaded, "https://python.org/") == "ask"


def test_a_grant_for_a_call_without_a_host_grants_nothing() -> None:
    p = policy()
    p.grant("web_fetch", {"url": "not a url"})
    assert verdict(p, "https://docs.python.org/") == "ask"


def test_only_a_configured_exact_rule_lets_a_host_resolve_privately() -> None:
    p = policy(allow=["web_fetch(domain:intranet.example)", "web_fetch(domain:*.corp.example)"])
    assert names_host_exactly(p, "intranet.example")
    assert not names_host_exactly(p, "wiki.corp.example")  # a wildcard is not the host
    p.grant("web_fetch", {"url": "http://router.example/"})
    assert verdict(p, "http://router.example/") == "allow"
    assert not names_host_exactly(p, "router.example")  # "always" is not a config rule
    assert not names_host_exactly(policy(allow=["web_fetch"]), "anything.example")


async def test_the_approval_says_the_domain_and_always_grants_it() -> None:
    p = policy()
    events: list[tuple[str, BaseModel]] = []
    granted: list[str] = []
    approvals = Approvals(
        policy=p,
        emit=lambda name, data: events.append((name, data)),
        on_grant=lambda rule, call_id: granted.append(str(rule)),
    )
    call = ToolUseBlock(id="toolu_1", name="web_fetch", input={"url": "https://docs.python.org/3/"})
    assert describe(call) == "fetch from docs.python.org: https://docs.python.org/3/"
    # A URL with a terminal control in it is no URL: it is refused without asking anyone.
    bad = {"url": "https://docs.python.org/\x1b[2J"}
    assert describe(ToolUseBlock(id="t", name="web_fetch", input=bad)).startswith(
        "fetch from an invalid URL"
    )
    assert p.decide("web_fetch", "read", bad).reason.startswith("web_fetch refuses this URL")
    decision = p.decide("web_fetch", "read", call.input)
    asking = asyncio.create_task(
        approvals.ask(call, kind="read", reason=decision.reason, diff=None, signal=lambda s: None)
    )
    await asyncio.sleep(0)
    request = approvals.pending()[0]
    assert "docs.python.org" in request.summary and "docs.python.org" in request.reason
    approvals.answer("toolu_1", Answer(allow=True, scope="session"))
    assert (await asking).allow
    assert granted == ["web_fetch(domain:docs.python.org)"]
    assert verdict(p, "https://docs.python.org/library") == "allow"
