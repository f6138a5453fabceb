"""The process's model-info cache on its own: waiting callers, cancellation, event loops."""

from __future__ import annotations

import asyncio

import pytest

from orchestrator.adapters.providers import ProviderError
from orchestrator.adapters.providers.model_info import ModelInfoCache, ModelKey, credential_digest

KEY = ModelKey(base_url="http://api", credential=credential_digest("secret"), model="m")


def test_a_credential_digest_is_stable_and_not_the_secret() -> None:
    assert credential_digest("secret") == credential_digest("secret") != credential_digest("s")
    assert "secret" not in credential_digest("secret")


async def test_one_caller_cancelled_does_not_cancel_the_lookup_the_others_wait_for() -> None:
    cache: ModelInfoCache[str] = ModelInfoCache()
    release, calls = asyncio.Event(), []

    async def fetch() -> str:
        calls.append(1)
        await release.wait()
        return "info"

    gone = asyncio.create_task(cache.get(KEY, fetch))
    waiting = asyncio.create_task(cache.get(KEY, fetch))
    await asyncio.sleep(0)  # both are waiting on the one lookup now
    gone.cancel()
    with pytest.raises(asyncio.CancelledError):
        await gone
    release.set()
    assert await waiting == "info"
    assert await cache.get(KEY, fetch) == "info"
    assert calls == [1]


async def test_a_lookup_nobody_waits_for_any_more_still_records_its_failure() -> None:
    cache: ModelInfoCache[str] = ModelInfoCache()
    release, again = asyncio.Event(), []

    async def fetch() -> str:
        await release.wait()
        raise ProviderError("the endpoint is down")

    async def fetch_again() -> str:
        again.append(1)
        return "info"

    gone = asyncio.create_task(cache.get(KEY, fetch))
    await asyncio.sleep(0)
    gone.cancel()
    release.set()
    for _ in range(10):  # the lookup ends on its own
        await asyncio.sleep(0)
    with pytest.raises(ProviderError, match="the endpoint is down"):
        await cache.get(KEY, fetch_again)
    assert again == []  # answered from memory


def test_each_event_loop_gets_its_own_lookup_and_shares_the_answer() -> None:
    cache: ModelInfoCache[str] = ModelInfoCache()
    calls: list[int] = []

    async def fetch() -> str:
        calls.append(1)
        return "info"

    assert asyncio.run(cache.get(KEY, fetch)) == "info"
    assert asyncio.run(cache.get(KEY, fetch)) == "info"
    assert calls == [1]
