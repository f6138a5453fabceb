"""What the Models API said about a model, once per process.

A model's window and capabilities are the same for every pod that uses it through the same
endpoint and key, so a host that serves many pods asks once, not once per pod (nor once per
reload). Lookups that start while one is in flight wait for it instead of sending their own.
An answer is kept for the life of the process; a failure only for :data:`FAILURE_TTL_S`, so
that an endpoint that was down is asked again later.

The key names the endpoint, the credential and the model. The credential is a digest, never
the secret: keys may end up in a log or a debugger, the secret must not.

This module does not import the SDK: the cache holds whatever the provider's lookup returns.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from orchestrator.adapters.providers.base import ProviderError

FAILURE_TTL_S = 60.0
"""How long a failed lookup is answered from memory before the endpoint is asked again."""

InfoT = TypeVar("InfoT")


@dataclass(frozen=True)
class ModelKey:
    """Which lookup: the endpoint, a digest of the credential, and the model."""

    base_url: str
    credential: str
    """``sha256:`` and the first 16 hex digits of the credential's digest."""
    model: str


def credential_digest(secret: str) -> str:
    """A stand-in for a credential in a cache key: equal for equal secrets, and not the
    secret."""
    return "sha256:" + hashlib.sha256(secret.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class _Failed:
    message: str
    at: float


class ModelInfoCache(Generic[InfoT]):
    """Model lookups shared by every provider of the process; see the module docstring."""

    def __init__(
        self, *, failure_ttl_s: float = FAILURE_TTL_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.failure_ttl_s = failure_ttl_s
        self._clock = clock
        self._known: dict[ModelKey, InfoT] = {}
        self._failed: dict[ModelKey, _Failed] = {}
        self._pending: dict[ModelKey, tuple[asyncio.AbstractEventLoop, asyncio.Task[InfoT]]] = {}

    async def get(self, key: ModelKey, fetch: Callable[[], Awaitable[InfoT]]) -> InfoT:
        """The model's info: remembered, or the lookup in flight, or ``fetch()`` now.

        :class:`ProviderError` when the lookup failed (now, or within ``failure_ttl_s``).
        """
        if key in self._known:
            return self._known[key]
        failed = self._failed.get(key)
        if failed is not None:
            if self._clock() - failed.at < self.failure_ttl_s:
                raise ProviderError(failed.message)
            del self._failed[key]
        loop = asyncio.get_running_loop()
        pending = self._pending.get(key)
        if pending is None or pending[0] is not loop:  # a task of another loop cannot be awaited
            task = loop.create_task(self._fetch(key, fetch))
            # Nobody may be left to await it (every caller cancelled): its failure is kept
            # in the cache, not reported as an exception never retrieved.
            task.add_done_callback(lambda done: done.cancelled() or done.exception())
            self._pending[key] = (loop, task)
            pending = (loop, task)
        # Shielded: one caller cancelled (a pod evicted mid-lookup) must not cancel the
        # lookup the others wait for.
        return await asyncio.shield(pending[1])

    async def _fetch(self, key: ModelKey, fetch: Callable[[], Awaitable[InfoT]]) -> InfoT:
        try:
            info = await fetch()
        except ProviderError as exc:
            self._failed[key] = _Failed(str(exc), self._clock())
            raise
        else:
            self._known[key] = info
            return info
        finally:
            if self._pending.get(key, (None, None))[1] is asyncio.current_task():
                del self._pending[key]

    def clear(self) -> None:
        """Forget every answer and failure (lookups in flight still finish)."""
        self._known.clear()
        self._failed.clear()


MODEL_INFOS: ModelInfoCache[Any] = ModelInfoCache()
"""The process's cache: every provider of the process uses it unless given another."""
