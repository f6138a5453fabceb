"""A host in the test's own process, on a private control socket and registry."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from orchestrator.serving.host import Host


@pytest.fixture
async def host(tmp_path: Path, short_dir: Path) -> AsyncIterator[Host]:
    served = Host(
        idle_unload_s=3600,
        control_path=short_dir / "host.sock",
        registry_path=tmp_path / "host-pods.json",
    )
    await served.start()
    try:
        yield served
    finally:
        await served.close()
