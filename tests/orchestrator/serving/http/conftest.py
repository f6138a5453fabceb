"""A real host in the test's process, its HTTP API served by uvicorn on a free loopback port,
driven with httpx only (as a script of a user would)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.orchestrator.serving.http.api import Api, start_api


@pytest.fixture
async def api(tmp_path: Path, short_dir: Path) -> AsyncIterator[Api]:
    running = await start_api(tmp_path, short_dir)
    try:
        yield running
    finally:
        await running.close()
