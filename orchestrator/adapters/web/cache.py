"""Pages fetched in the last 15 minutes, in memory, so reading on in a long page costs no fetch.

An entry is found by the URL asked for (and by the final URL it ended at, after redirects),
and is served only while the rules still say of every host it went through what they said
when it was fetched: a host denied since, or a private host whose exact allow rule was
removed, makes the entry unusable and the page is fetched again (and refused). Nothing is
written to disk; the cache ends with the pod.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass

from orchestrator.adapters.web.convert import Converted

__all__ = ["CACHE_TTL_S", "CachedPage", "PageCache"]

CACHE_TTL_S = 15 * 60.0
"""How long a fetched page is served from memory."""

CACHE_MAX_BYTES = 64 * 1024 * 1024
"""What all cached pages may hold together (their text and base64 data); the oldest go first."""


@dataclass(frozen=True, slots=True)
class CachedPage:
    """A page as the model was shown it, and what the rules said when it was fetched."""

    url: str
    """The final URL."""
    status: int
    reason: str
    converted: Converted
    hosts: tuple[str, ...]
    """Every host the fetch went through, in order."""
    verdicts: tuple[Hashable, ...]
    """What the rules said of each of them (compared, not read)."""
    at: float

    @property
    def size(self) -> int:
        """Roughly the memory it holds."""
        c = self.converted
        return (
            len(c.text or "")
            + (len(c.image.data) if c.image is not None else 0)
            + (len(c.document.data) if c.document is not None else 0)
        )


class PageCache:
    """Recently fetched pages by URL, for :data:`CACHE_TTL_S`."""

    def __init__(
        self,
        *,
        ttl_s: float = CACHE_TTL_S,
        max_bytes: int = CACHE_MAX_BYTES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ttl_s = ttl_s
        self.max_bytes = max_bytes
        self.clock = clock
        self._pages: OrderedDict[str, CachedPage] = OrderedDict()

    def get(
        self, url: str, verdicts: Callable[[tuple[str, ...]], tuple[Hashable, ...]]
    ) -> CachedPage | None:
        """The page cached for ``url``, if fresh and the rules (``verdicts`` of its hosts, now)
        say what they said then."""
        page = self._pages.get(url)
        if page is None:
            return None
        if self.clock() - page.at > self.ttl_s or verdicts(page.hosts) != page.verdicts:
            del self._pages[url]
            return None
        return page

    def put(self, urls: tuple[str, ...], page: CachedPage) -> None:
        """Keep ``page`` under each of ``urls`` (asked for, final)."""
        if page.size > self.max_bytes:
            return
        for url in dict.fromkeys(urls):
            self._pages.pop(url, None)
            self._pages[url] = page
        now = self.clock()
        for url in [u for u, p in self._pages.items() if now - p.at > self.ttl_s]:
            del self._pages[url]
        while sum(p.size for p in {id(p): p for p in self._pages.values()}.values()) > (
            self.max_bytes
        ):
            self._pages.popitem(last=False)

    def __len__(self) -> int:
        return len(self._pages)
