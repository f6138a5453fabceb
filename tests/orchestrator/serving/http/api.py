"""Test helpers for the HTTP API: a served host, an httpx client with its token, and an SSE
reader (a small parser of ``text/event-stream``, as a script would write one)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from cli.http_api import configure_pod
from orchestrator.serving.host import Host
from orchestrator.serving.http.address import parse_http_address, read_http_info
from orchestrator.serving.http.hosting import host_context
from orchestrator.serving.http.server import HttpServer, start_http


@dataclass
class Frame:
    """One SSE event as a client reads it."""

    event: str
    data: dict[str, Any]
    id: str | None


@dataclass
class Api:
    """A served host and what a client needs to reach its API."""

    host: Host
    server: HttpServer
    url: str
    token: str
    info_path: Path
    clients: list[httpx.AsyncClient] = field(default_factory=list)

    def client(self, *, token: str | None = "", **headers: str) -> httpx.AsyncClient:
        """An httpx client of the API; ``token``: "" for the right one, None for none."""
        sent = dict(headers)
        if token is not None:
            sent.setdefault("Authorization", f"Bearer {token or self.token}")
        client = httpx.AsyncClient(base_url=self.url, headers=sent, timeout=60.0)
        self.clients.append(client)
        return client

    async def close(self) -> None:
        for client in self.clients:
            await client.aclose()
        await self.server.stop()
        await self.host.close()


async def start_api(tmp_path: Path, short_dir: Path, info_path: Path | None = None) -> Api:
    """A host on a private control socket, and its API on 127.0.0.1 at a free port, saying
    so in ``info_path`` (default: a private file of the test)."""
    host = Host(
        idle_unload_s=3600,
        control_path=short_dir / "host.sock",
        registry_path=tmp_path / "host-pods.json",
    )
    await host.start()
    info_path = info_path or short_dir / "_http.json"
    server = await start_http(
        host_context(host, configure_pod),
        parse_http_address("127.0.0.1:0"),
        info_path,
        announce=False,
    )
    info = read_http_info(info_path)
    assert info is not None
    return Api(host, server, info["url"], info["token"], info_path)


def workspace(tmp_path: Path, name: str) -> Path:
    """A small workspace folder."""
    folder = tmp_path / name
    folder.mkdir(exist_ok=True)
    (folder / "README.md").write_text(f"# {name}\n")
    return folder


async def add_pod(client: httpx.AsyncClient, folder: Path, **body: Any) -> dict[str, Any]:
    """``POST /v1/pods``; the row."""
    response = await client.post("/v1/pods", json={"workspace": str(folder), **body})
    assert response.status_code == 201, response.text
    return response.json()  # type: ignore[no-any-return]


async def sse_frames(
    client: httpx.AsyncClient, path: str, headers: dict[str, str] | None = None
) -> AsyncIterator[Frame]:
    """The frames of an SSE stream, until it ends (comments skipped)."""
    async with client.stream("GET", path, headers=headers or {}) as response:
        assert response.status_code == 200, await response.aread()
        assert response.headers["content-type"].startswith("text/event-stream")
        fields: dict[str, str] = {}
        async for line in response.aiter_lines():
            if line == "":
                if "data" in fields:
                    yield Frame(
                        fields.get("event", "message"), json.loads(fields["data"]), fields.get("id")
                    )
                fields = {}
                continue
            if line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            fields[name] = value[1:] if value.startswith(" ") else value


class Stream:
    """An SSE stream read in the background: frames pile up in :attr:`frames`."""

    def __init__(self, client: httpx.AsyncClient, path: str, headers: dict[str, str] | None = None):
        self.frames: list[Frame] = []
        self._new = asyncio.Event()
        self.ended = False
        self._task = asyncio.create_task(self._read(client, path, headers))

    async def _read(
        self, client: httpx.AsyncClient, path: str, headers: dict[str, str] | None
    ) -> None:
        try:
            async for frame in sse_frames(client, path, headers):
                self.frames.append(frame)
                self._new.set()
        finally:
            self.ended = True
            self._new.set()

    async def until(self, event: str, *, timeout: float = 60.0, **match: Any) -> Frame:
        """The first frame (from the start) named ``event`` whose data matches ``match``."""

        async def scan() -> Frame:
            seen = 0
            while True:
                for frame in self.frames[seen:]:
                    if frame.event == event and all(
                        frame.data.get(k) == v for k, v in match.items()
                    ):
                        return frame
                seen = len(self.frames)
                if self.ended:
                    if self._task.done() and self._task.exception() is not None:
                        raise self._task.exception()  # type: ignore[misc]
                    raise AssertionError(
                        f"the stream ended before {event}: {[f.event for f in self.frames]}"
                    )
                self._new.clear()
                await self._new.wait()

        return await asyncio.wait_for(scan(), timeout)

    async def close(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._task
