"""The web, for the local ``web_fetch`` tool: fetching a URL safely and converting what came back.

:mod:`.fetcher` requests a URL (each redirect re-checked, at most 10 MB, timeouts);
:mod:`.pinning` resolves hosts, refuses non-public addresses and pins connections to the
addresses checked; :mod:`.convert` turns a body into markdown, text, a PDF document or an
image; :mod:`.cache` keeps pages for 15 minutes. The permission rules that decide which hosts
may be fetched are :mod:`orchestrator.capabilities.permissions.web`; the tool that ties them
together is :mod:`orchestrator.capabilities.tools.web_fetch`.
"""

from __future__ import annotations

from orchestrator.adapters.web.cache import CACHE_TTL_S, CachedPage, PageCache
from orchestrator.adapters.web.convert import Converted, convert
from orchestrator.adapters.web.fetcher import (
    MAX_BYTES,
    MAX_REDIRECTS,
    HopCheck,
    HopVerdict,
    Page,
    Redirect,
    WebFetcher,
)
from orchestrator.adapters.web.pinning import (
    FetchRefused,
    PinnedBackend,
    Resolver,
    checked_addresses,
    system_resolver,
)

__all__ = [
    "CACHE_TTL_S",
    "MAX_BYTES",
    "MAX_REDIRECTS",
    "CachedPage",
    "Converted",
    "FetchRefused",
    "HopCheck",
    "HopVerdict",
    "Page",
    "PageCache",
    "PinnedBackend",
    "Redirect",
    "Resolver",
    "WebFetcher",
    "checked_addresses",
    "convert",
    "system_resolver",
]
