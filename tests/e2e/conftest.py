"""Fixtures shared by the end-to-end tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from conformance.fake_api import FakeAnthropic


@pytest.fixture
async def fake() -> AsyncIterator[FakeAnthropic]:
    """The fake Messages API, on real HTTP."""
    server = FakeAnthropic().start()
    try:
        yield server
    finally:
        server.stop()
