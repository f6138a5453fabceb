"""The prompt cache as the real API keeps it, and the usage it reports.

A block whose ``cache_control`` is ``{"type": "ephemeral"}`` (``"ttl"``: ``"5m"``, the
default, or ``"1h"``) is a **breakpoint**; a request may have at most
:data:`MAX_BREAKPOINTS`, and a top-level ``cache_control`` puts one on the last cacheable
block. An entry is keyed by the model and the exact prefix up to a breakpoint (the blocks'
prefix hash, ``cache_control`` left out) and lives for its TTL, renewed by each hit.

For one request (:func:`plan_cache`, pure): each breakpoint, from the last to the first,
looks for a live entry ending at it or at one of the :data:`LOOKBACK_BLOCKS` blocks before
it; the first found is the longest cached prefix and is **read**. Everything after it up to
the last breakpoint is **written** (an entry at each breakpoint past the read), and what
follows the last breakpoint is plain input. A prefix shorter than the model's minimum is
never cached: if the last breakpoint's prefix is below it, the whole prompt is input.
:class:`PromptCache` keeps the entries and applies a plan under a lock, with an injectable
clock so tests can let entries expire.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from conformance.tokens import PromptBlock
from conformance.validation import Rejected

__all__ = [
    "LOOKBACK_BLOCKS",
    "MAX_BREAKPOINTS",
    "TTL_SECONDS",
    "Breakpoint",
    "CachePlan",
    "CacheUsage",
    "ManualClock",
    "PromptCache",
    "cache_breakpoints",
    "plan_cache",
]

Ttl: TypeAlias = Literal["5m", "1h"]
MAX_BREAKPOINTS = 4
"""Blocks with ``cache_control`` one request may carry; more is a 400."""
LOOKBACK_BLOCKS = 20
"""How many blocks before a breakpoint a lookup also tries."""
TTL_SECONDS: Mapping[Ttl, float] = {"5m": 300.0, "1h": 3600.0}


@dataclass(frozen=True, slots=True)
class Breakpoint:
    """A block that ends a prefix to cache, and for how long."""

    index: int
    """The block's position in the prompt (see :func:`~conformance.tokens.prompt_blocks`)."""
    ttl: Ttl = "5m"


def _ttl_of(cache_control: Any, location: str) -> Ttl:
    if not isinstance(cache_control, Mapping) or cache_control.get("type") != "ephemeral":
        raise Rejected(
            400, "invalid_request_error", f"{location}.type: Input should be 'ephemeral'"
        )
    ttl = cache_control.get("ttl", "5m")
    if ttl not in TTL_SECONDS:
        raise Rejected(
            400, "invalid_request_error", f"{location}.ttl: Input should be '5m' or '1h'"
        )
    return "1h" if ttl == "1h" else "5m"


def cache_breakpoints(
    prompt: Sequence[PromptBlock], request_cache_control: Any = None
) -> list[Breakpoint]:
    """The request's breakpoints in prompt order; :class:`Rejected` when the API would refuse.

    ``request_cache_control`` is the request's top-level ``cache_control``: it marks the last
    cacheable block, unless that block is already a breakpoint.
    """
    points = [
        Breakpoint(i, _ttl_of(block.cache_control, f"{block.location}.cache_control"))
        for i, block in enumerate(prompt)
        if block.cache_control is not None
    ]
    if request_cache_control is not None:
        ttl = _ttl_of(request_cache_control, "cache_control")
        last = next((i for i in reversed(range(len(prompt))) if prompt[i].cacheable), None)
        if last is not None and all(point.index != last for point in points):
            points.append(Breakpoint(last, ttl))
    if len(points) > MAX_BREAKPOINTS:
        raise Rejected(
            400,
            "invalid_request_error",
            f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. "
            f"Found {len(points)}.",
        )
    return points


@dataclass(frozen=True, slots=True)
class CacheUsage:
    """The input side of a response's ``usage``."""

    input_tokens: int
    """Tokens after the last breakpoint (all of them when nothing was cached or read)."""
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    ephemeral_5m_input_tokens: int = 0
    ephemeral_1h_input_tokens: int = 0

    @property
    def total(self) -> int:
        """Every input token of the request, however it was billed."""
        return self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens

    def fields(self) -> dict[str, Any]:
        """The counts as the API's ``usage`` object carries them."""
        return {
            "input_tokens": self.input_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
            "cache_creation": {
                "ephemeral_5m_input_tokens": self.ephemeral_5m_input_tokens,
                "ephemeral_1h_input_tokens": self.ephemeral_1h_input_tokens,
            },
        }


@dataclass(frozen=True, slots=True)
class CachePlan:
    """What one request reads, writes and renews, and the usage that follows."""

    usage: CacheUsage
    read_at: int | None
    """The block index the read prefix ends at, or ``None`` for no read."""
    writes: tuple[Breakpoint, ...]
    """Breakpoints whose prefix becomes a new entry."""
    renews: tuple[int, ...]
    """Block indexes of existing entries the request used (the read, earlier breakpoints)."""


def plan_cache(
    prompt: Sequence[PromptBlock],
    points: Sequence[Breakpoint],
    *,
    is_cached: Callable[[str], bool],
    min_tokens: int,
    lookback: int = LOOKBACK_BLOCKS,
) -> CachePlan:
    """Work out one request's cache reads and writes; ``is_cached(prefix_hash)`` looks up."""
    cumulative = list(itertools.accumulate(block.tokens for block in prompt))
    total = cumulative[-1] if cumulative else 0
    if not points or cumulative[points[-1].index] < min_tokens:
        return CachePlan(CacheUsage(input_tokens=total), None, (), ())
    last = points[-1].index
    read_at: int | None = None
    for point in reversed(points):
        for index in range(point.index, max(-1, point.index - lookback - 1), -1):
            if cumulative[index] >= min_tokens and is_cached(prompt[index].prefix_hash):
                read_at = index
                break
        if read_at is not None:
            break
    read = cumulative[read_at] if read_at is not None else 0
    by_ttl: dict[Ttl, int] = {"5m": 0, "1h": 0}
    start = read
    for point in points:
        end = cumulative[point.index]
        if end > start:
            # The tokens written since the previous breakpoint live as long as this one says.
            by_ttl[point.ttl] += end - start
            start = end
    floor = -1 if read_at is None else read_at
    writes = tuple(p for p in points if p.index > floor and cumulative[p.index] >= min_tokens)
    renews = tuple(
        p.index for p in points if p.index <= floor and is_cached(prompt[p.index].prefix_hash)
    )
    if read_at is not None and read_at not in renews:
        renews += (read_at,)
    usage = CacheUsage(
        input_tokens=total - cumulative[last],
        cache_creation_input_tokens=cumulative[last] - read,
        cache_read_input_tokens=read,
        ephemeral_5m_input_tokens=by_ttl["5m"],
        ephemeral_1h_input_tokens=by_ttl["1h"],
    )
    return CachePlan(usage, read_at, writes, renews)


class ManualClock:
    """A clock that moves only when told, for tests of expiry: pass it as ``clock``."""

    def __init__(self, start: float = 0.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        """Let ``seconds`` pass."""
        self.now += seconds


@dataclass(slots=True)
class _Entry:
    expires_at: float
    ttl_s: float


class PromptCache:
    """Cache entries of one fake API, keyed by model and prefix hash, with their expiry."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._entries: dict[tuple[str, str], _Entry] = {}
        self._lock = threading.Lock()

    def account(
        self,
        model: str,
        prompt: Sequence[PromptBlock],
        points: Sequence[Breakpoint],
        *,
        min_tokens: int,
    ) -> CacheUsage:
        """Plan one request against the live entries, apply it, and return its usage."""
        with self._lock:
            now = self.clock()
            self._entries = {k: e for k, e in self._entries.items() if e.expires_at > now}
            plan = plan_cache(
                prompt,
                points,
                is_cached=lambda prefix: (model, prefix) in self._entries,
                min_tokens=min_tokens,
            )
            for index in plan.renews:
                entry = self._entries[(model, prompt[index].prefix_hash)]
                entry.expires_at = now + entry.ttl_s
            for point in plan.writes:
                ttl_s = TTL_SECONDS[point.ttl]
                self._entries[(model, prompt[point.index].prefix_hash)] = _Entry(now + ttl_s, ttl_s)
            return plan.usage

    def __len__(self) -> int:
        """How many entries are alive now."""
        with self._lock:
            now = self.clock()
            return sum(1 for entry in self._entries.values() if entry.expires_at > now)

    def clear(self) -> None:
        """Forget every entry."""
        with self._lock:
            self._entries.clear()
