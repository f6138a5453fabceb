"""``web_fetch``'s permissions: a read, except that a domain not yet allowed asks.

A fetch is about a **host**, not a path or a command: rules name it as
``web_fetch(domain:docs.python.org)`` (``*.python.org`` for the names under it, ``*`` for
any), and Claude Code's ``WebFetch(domain:…)`` is read the same. The verdict for a fetch from
a host is, in order:

1. a ``deny`` rule for the host (or a bare ``web_fetch`` / ``read`` deny) denies;
2. an ``allow`` rule or this session's "always" answer for the host allows;
3. an ``ask`` rule for the host asks;
4. ``yolo`` mode allows any host;
5. otherwise it asks, naming the host, in every mode (``read-only`` included: a fetch only
   reads, but a new domain is a person's call). "Always" allows that host for the session.

A bare ``allow = ["read"]`` does not allow every domain: kind rules are about files. A
rule's pattern is never matched against a URL's path or query. The fetcher asks the same
question for every redirect it is sent on (:func:`host_decision`).

Whether a host may resolve to a private or loopback address is a separate, stricter
question (:func:`names_host_exactly`): only a configured ``allow`` rule that names the host
itself, without a wildcard, lets it; a person's "always" answer does not, as a name on an
approval prompt says nothing about where it resolves.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal, NamedTuple, Protocol

from orchestrator.capabilities.permissions.rules import KIND_ALIASES, Rule
from orchestrator.core.web import LOCAL_FETCH_TOOL
from orchestrator.core.web_targets import DOMAIN_PREFIX, domain_matches, domain_pattern, host_of

__all__ = [
    "WEB_FETCH",
    "FetchVerdict",
    "Rules",
    "fetch_decision",
    "fetch_grant",
    "host_decision",
    "names_host_exactly",
]

WEB_FETCH = LOCAL_FETCH_TOOL
"""The local fetch tool's name."""


class Rules(Protocol):
    """What a fetch is judged by: a policy's mode and rules (:class:`~.policy.Policy`)."""

    @property
    def mode(self) -> str: ...
    @property
    def allow(self) -> list[Rule]: ...
    @property
    def ask(self) -> list[Rule]: ...
    @property
    def deny(self) -> list[Rule]: ...
    @property
    def granted(self) -> list[Rule]: ...


class FetchVerdict(NamedTuple):
    """A verdict on a fetch and why (the policy makes it a ``Decision``)."""

    verdict: Literal["allow", "ask", "deny"]
    reason: str


def _applies(rule: Rule, host: str, *, kind_rules: bool) -> bool:
    """Whether ``rule`` is about fetching from ``host``."""
    kind = KIND_ALIASES.get(rule.tool.lower())
    if kind is not None:
        # A bare ``read`` deny covers every read, fetches included; a kind rule with a path
        # pattern is about files, and no kind rule allows a domain.
        return kind_rules and kind == "read" and rule.subject is None
    if not rule.covers_tool(WEB_FETCH, "read"):
        return False
    if rule.subject is None:
        return True
    if rule.exact:
        return rule.subject == DOMAIN_PREFIX + host
    try:
        pattern = domain_pattern(rule.subject)
    except ValueError:
        return False  # a tool glob (``*(src/**)``) that reaches this tool with a path pattern
    return domain_matches(pattern, host)


def _first(rules: Iterable[Rule], host: str, *, kind_rules: bool = False) -> Rule | None:
    return next((r for r in rules if _applies(r, host, kind_rules=kind_rules)), None)


def fetch_decision(policy: Rules, arguments: dict[str, Any]) -> FetchVerdict:
    """The verdict for a ``web_fetch`` call (or a redirect it follows) on ``arguments["url"]``."""
    url = arguments.get("url")
    host = host_of(url) if isinstance(url, str) else None
    if host is None:
        # Nothing is fetched: the tool refuses the URL itself and says why. Only a rule that
        # denies the whole tool applies.
        whole = next(
            (r for r in policy.deny if r.subject is None and _applies(r, "", kind_rules=True)),
            None,
        )
        if whole is not None:
            return FetchVerdict("deny", f"denied by the rule {whole}")
        return FetchVerdict("allow", "web_fetch refuses this URL itself; nothing is fetched")
    return host_decision(policy, host)


def host_decision(policy: Rules, host: str) -> FetchVerdict:
    """The verdict for fetching from ``host`` (normalized, as rules compare hosts)."""
    hit = _first(policy.deny, host, kind_rules=True)
    if hit is not None:
        return FetchVerdict("deny", f"denied by the rule {hit}")
    hit = _first([*policy.allow, *policy.granted], host)
    if hit is not None:
        return FetchVerdict("allow", f"allowed by the rule {hit}")
    hit = _first(policy.ask, host)
    if hit is not None:
        return FetchVerdict("ask", f"the rule {hit} asks before fetching from {host}")
    if policy.mode == "yolo":
        return FetchVerdict("allow", "yolo mode allows fetching from any domain")
    return FetchVerdict("ask", f"fetching from {host} asks: no rule allows that domain yet")


def fetch_grant(arguments: dict[str, Any]) -> Rule:
    """The rule an "always" answer to a fetch adds: that host, for the session.

    ``arguments`` are the call's (``url``) or, when a session is loaded, the recorded rule's
    subject as ``command`` (``domain:<host>``)."""
    url, command = arguments.get("url"), arguments.get("command")
    host = host_of(url) if isinstance(url, str) else None
    if host is None and isinstance(command, str) and command.startswith(DOMAIN_PREFIX):
        host = command[len(DOMAIN_PREFIX) :]
    # A call with no host to allow grants a rule that matches nothing.
    return Rule(WEB_FETCH, DOMAIN_PREFIX + (host or ""), exact=True)


def names_host_exactly(policy: Rules, host: str) -> bool:
    """Whether a configured ``allow`` rule names ``host`` itself (no wildcard): only then may
    it resolve to a loopback, private or link-local address."""
    for rule in policy.allow:
        if rule.subject is None or KIND_ALIASES.get(rule.tool.lower()) is not None:
            continue
        if not rule.covers_tool(WEB_FETCH, "read"):
            continue
        try:
            if domain_pattern(rule.subject) == host:
                return True
        except ValueError:
            continue
    return False
