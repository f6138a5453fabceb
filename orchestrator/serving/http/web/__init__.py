"""The web page of a host's pods (issue 46 §3): ``GET /``, its static files, and the charts.

No build step: ``static/`` holds one HTML file, plain ES modules and a style sheet, served as
they are (package data). The page speaks only the HTTP API (``/v1/…``, SSE for the events)
and puts every text a model, a tool or a config wrote into the page with ``textContent``.
Every answer here carries a Content-Security-Policy that allows the page's own files and
nothing else: no inline script, no other origin, no frames.

The charts are drawn on the server (:mod:`orchestrator.core.charts`) from a pod's
``get_stats`` reply and from the host's :class:`~orchestrator.core.memory_series.MemorySeries`,
which :mod:`.sampler` fills while the server runs.
"""

from __future__ import annotations

import json
from importlib import resources

from fastapi import APIRouter
from fastapi.responses import Response

from orchestrator.core.charts import TurnUsage, memory_chart, states_chart, usage_chart
from orchestrator.core.status_colours import STATUS_COLOURS, UNLOADED_COLOUR
from orchestrator.protocol import StatsData
from orchestrator.serving.client import ClientError, PodClient
from orchestrator.serving.http.context import ApiError, HttpContext
from orchestrator.serving.http.web.sampler import series_of, stop_sampling
from states.lifecycle import PUBLIC_STATUS

__all__ = ["CSP", "STATIC_FILES", "stop_sampling", "web_router"]

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
"""The page's Content-Security-Policy: its own files only, no inline script or style."""

_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}

STATIC_FILES: dict[str, str] = {
    "style.css": "text/css; charset=utf-8",
    "app.js": "text/javascript; charset=utf-8",
    "api.js": "text/javascript; charset=utf-8",
    "dom.js": "text/javascript; charset=utf-8",
    "pods.js": "text/javascript; charset=utf-8",
    "pod.js": "text/javascript; charset=utf-8",
    "conversation.js": "text/javascript; charset=utf-8",
    "forms.js": "text/javascript; charset=utf-8",
}
"""The files under ``/static/``, by name: a fixed list, so no path reaches anything else."""

STATS_TIMEOUT_S = 10.0


def _static(name: str) -> bytes:
    return resources.files(__package__).joinpath("static", name).read_bytes()


def status_css() -> str:
    """``/static/status.css``: a class per public status, in the TUI's colours."""
    rules = [
        f".st-{status} {{ --st: {colour.strong}; --st-muted: {colour.muted}; }}"
        for status, colour in {**STATUS_COLOURS, "unloaded": UNLOADED_COLOUR}.items()
    ]
    # Idle's colour is the panel itself: its pill gets a visible edge.
    rules.append(".st-idle { --st: #5c6b77; }\n.st-unloaded { --st: #3a3a3a; }")
    return "\n".join(rules) + "\n"


def states_js() -> str:
    """``/static/states.js``: the public status of every machine state (the machine's own
    table), so the page colours a host's row without knowing the machine."""
    return f"export const STATUS_OF = Object.freeze({json.dumps(dict(PUBLIC_STATUS))});\n"


def _svg(text: str) -> Response:
    return Response(text, media_type="image/svg+xml", headers=_HEADERS)


def turn_usage(stats: StatsData) -> list[TurnUsage]:
    """The ``stats`` reply's turns as the usage chart draws them."""
    return [
        TurnUsage(
            turn=row.turn,
            cache_read=row.cache_read_input_tokens,
            cache_write=row.cache_creation_input_tokens,
            input=row.input_tokens,
            output=row.output_tokens,
            cost_usd=row.cost_usd,
        )
        for row in stats.turns
    ]


async def pod_stats(ctx: HttpContext, name: str) -> StatsData:
    """Ask the pod for its ``stats`` (a host loads an unloaded pod to answer)."""
    socket = ctx.socket_for(name)  # 404 for an unknown pod
    try:
        client = await PodClient.connect(socket)
    except (ClientError, OSError) as exc:
        raise ApiError(502, "unreachable", f"pod {name} cannot be reached: {exc}") from None
    try:
        return await client.stats(timeout=STATS_TIMEOUT_S)
    except (ClientError, TimeoutError) as exc:
        raise ApiError(502, "unreachable", f"pod {name} did not answer get_stats: {exc}") from None
    finally:
        await client.close()


def web_router(ctx: HttpContext) -> APIRouter:
    """The page, its files, and the charts of a pod and of the host."""
    router = APIRouter(include_in_schema=False)
    series_of(ctx)  # the host is sampled from the server's start

    @router.get("/")
    async def page() -> Response:
        series_of(ctx)  # where the routes were built outside a loop, sampling starts here
        return Response(
            _static("index.html"), media_type="text/html; charset=utf-8", headers=_HEADERS
        )

    @router.get("/static/status.css")
    async def colours() -> Response:
        return Response(status_css(), media_type="text/css; charset=utf-8", headers=_HEADERS)

    @router.get("/static/states.js")
    async def state_table() -> Response:
        return Response(states_js(), media_type="text/javascript; charset=utf-8", headers=_HEADERS)

    @router.get("/static/{name}")
    async def static(name: str) -> Response:
        media = STATIC_FILES.get(name)
        if media is None:
            raise ApiError(404, "not_found", f"no static file {name!r}")
        return Response(_static(name), media_type=media, headers=_HEADERS)

    @router.get("/v1/pods/{name}/charts/usage.svg")
    async def usage(name: str) -> Response:
        stats = await pod_stats(ctx, name)
        return _svg(usage_chart(turn_usage(stats), title=f"{name}: tokens and cost by turn"))

    @router.get("/v1/pods/{name}/charts/states.svg")
    async def states(name: str) -> Response:
        stats = await pod_stats(ctx, name)
        return _svg(
            states_chart(stats.state_seconds, stats.status_of, title=f"{name}: time in each state")
        )

    @router.get("/v1/host/charts/memory.svg")
    async def memory() -> Response:
        series = series_of(ctx)
        return _svg(memory_chart(series.samples(), title="Pods and memory"))

    return router
