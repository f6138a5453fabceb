"""``[web]``: web search and fetch (docs/web.md).

The model's field docstrings are the key reference of docs/configuration.md. What a
workspace's own ``.pod/config.toml`` may set here is decided in
:mod:`orchestrator.config.grants` (it may only narrow).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from orchestrator.core.web import FetchSetting, SearchSetting

__all__ = ["DEFAULT_MAX_USES", "MAX_USES_LIMIT", "WebConfig", "web_overrides"]

DEFAULT_MAX_USES = 8
"""``max_uses`` when no config sets it."""

MAX_USES_LIMIT = 100
"""The most ``max_uses`` any source may set: each search is billed, and a request may run
this many of them before the model answers."""


class WebConfig(BaseModel):
    """Whether the model may search the web and read pages, and within what."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, defer_build=True)

    search: SearchSetting = "auto"
    """``auto``: the API's web search where the model supports it (the Models API says so);
    ``on``: declared even where the pod cannot tell; ``off``: never. Each search is billed
    (``prices.<name>.web_search_per_1k``)."""
    fetch: FetchSetting = "auto"
    """``auto``: the API's web fetch tool where the model supports it, else the pod's own
    ``web_fetch`` tool (``local``); ``server``: only the API's; ``local``: only the pod's
    (fetched from this machine, under its permission rules); ``off``: no fetching."""
    max_uses: int = Field(default=DEFAULT_MAX_USES, ge=1, le=MAX_USES_LIMIT)
    """How many searches (and, separately, server fetches) one request may run (the server
    tools' ``max_uses``; past it the API answers ``max_uses_exceeded``), at most 100."""
    allowed_domains: list[str] = Field(default_factory=list)
    """Only these domains in search results and server fetches (``example.com`` covers its
    subdomains). The API takes one list per tool: not with ``blocked_domains``."""
    blocked_domains: list[str] = Field(default_factory=list)
    """Domains search results and server fetches never include. A workspace's config may add
    to your list (unless you set ``allowed_domains``)."""

    @field_validator("allowed_domains", "blocked_domains")
    @classmethod
    def _plain_domains(cls, domains: list[str]) -> list[str]:
        for domain in domains:
            # The API takes a bare domain (an optional path): a scheme or blank is refused
            # there, mid-turn; refuse it here, at start, naming the entry.
            if not domain or "://" in domain or any(ch.isspace() for ch in domain):
                raise ValueError(
                    f"{domain!r} is not a domain: write it bare, as example.com (no scheme, "
                    "no spaces)"
                )
        return domains

    @model_validator(mode="after")
    def _one_list(self) -> WebConfig:
        if self.allowed_domains and self.blocked_domains:
            raise ValueError(
                "allowed_domains and blocked_domains are both set, and the API refuses a web "
                "tool that carries both: keep one of the two lists (allowed_domains alone "
                "already excludes every other domain)"
            )
        return self


def web_overrides(web: str | None) -> dict[str, str] | None:
    """The ``[web]`` keys ``--web`` sets: ``on`` turns search on and leaves fetch as
    configured; ``off`` turns both off; None (not given) sets nothing."""
    if web == "on":
        return {"search": "on"}
    if web == "off":
        return {"search": "off", "fetch": "off"}
    return None
