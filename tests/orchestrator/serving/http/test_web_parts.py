"""The web routes' edges on an app of their own (no host): a pod that cannot be reached is a
502 with the one error shape, and the host's sampler outlives a listing that fails."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx

from orchestrator.serving.host.control import HostStats, PodRow
from orchestrator.serving.http.app import aclose_app, build_app
from orchestrator.serving.http.context import ApiError, HttpContext
from orchestrator.serving.http.web.sampler import is_sampling, series_of, stop_sampling

HOST = "127.0.0.1:9"


def context(tmp_path: Path, pods: list[PodRow], failures: int = 0) -> HttpContext:
    left = [failures]

    async def listing() -> list[PodRow]:
        if left[0] > 0:
            left[0] -= 1
            raise OSError("the host is busy")
        return pods

    async def host_stats() -> HostStats | None:
        return HostStats(pid=1, rss_bytes=50_000_000, loaded=1, registered=len(pods))

    def socket_for(name: str) -> Path:
        if name not in {p.name for p in pods}:
            raise ApiError(404, "unknown_pod", f"no pod {name}")
        return tmp_path / f"{name}.sock"  # nothing listens there

    async def remove(name: str) -> None:
        return None

    return HttpContext(
        pods=listing,
        host_stats=host_stats,
        socket_for=socket_for,
        add_pod=None,
        remove_pod=remove,
        token="t0ken",
        allowed_hosts=frozenset({HOST}),
        origin=f"http://{HOST}",
    )


def row(name: str, loaded: bool) -> PodRow:
    return PodRow(
        name=name,
        workspace=f"/w/{name}",
        socket=f"/s/{name}",
        loaded=loaded,
        state="idle" if loaded else "unloaded",
        last_active_ms=0,
    )


async def test_a_pod_that_cannot_be_reached_is_a_502(tmp_path: Path) -> None:
    ctx = context(tmp_path, [row("gone", True)])
    app = build_app(ctx)
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app),
            base_url=f"http://{HOST}",
            headers={"Authorization": "Bearer t0ken"},
        ) as http:
            for chart in ("usage", "states"):
                got = await http.get(f"/v1/pods/gone/charts/{chart}.svg")
                assert got.status_code == 502
                assert got.json()["error"]["code"] == "unreachable"
                assert "gone" in got.json()["error"]["message"]
            unknown = await http.get("/v1/pods/nobody/charts/states.svg")
            assert unknown.status_code == 404
    finally:
        await aclose_app(app)


async def test_the_sampler_goes_on_after_a_listing_fails(tmp_path: Path) -> None:
    ctx = context(tmp_path, [row("a", True), row("b", False), row("c", False)], failures=2)
    series = series_of(ctx)
    assert is_sampling(ctx)
    series.interval_s = 0.01
    try:

        async def sampled() -> None:
            while len(series) == 0:
                await asyncio.sleep(0.01)

        await asyncio.wait_for(sampled(), 60)
        [first, *_] = series.samples()
        assert (first.loaded, first.unloaded, first.rss_bytes) == (1, 2, 50_000_000)
    finally:
        await stop_sampling(ctx)
    # Stopped for good: a late page does not start it again.
    assert not is_sampling(ctx)
    assert series_of(ctx) is series
    assert not is_sampling(ctx)
