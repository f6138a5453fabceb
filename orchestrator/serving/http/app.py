"""``build_app``: the FastAPI app of a host's (or one pod's) HTTP API, behind its gate."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from orchestrator.serving.http.context import ApiError, HttpContext
from orchestrator.serving.http.events import EventStreams, events_router
from orchestrator.serving.http.guard import Guard
from orchestrator.serving.http.links import PodLinks
from orchestrator.serving.http.routes import api_router
from orchestrator.serving.http.web import stop_sampling, web_router

__all__ = ["aclose_app", "build_app"]

API_VERSION = "1"


def build_app(ctx: HttpContext) -> FastAPI:
    """The FastAPI app on ``ctx``'s pods, behind its gate (:class:`~.guard.Guard`: token,
    ``Host``, ``Origin``, body size), which guards the generated ``/openapi.json`` too."""
    app = FastAPI(
        title="pod-orchestrator HTTP API",
        version=API_VERSION,
        description="Pods of a host (or one pod) over HTTP and Server-Sent Events: "
        "docs/http.md. Every route needs the token (Authorization: Bearer).",
        docs_url="/docs",
        redoc_url=None,
    )
    links = PodLinks(ctx.socket_for)
    streams = EventStreams()
    app.state.ctx = ctx
    app.state.links = links
    app.state.streams = streams

    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError) -> JSONResponse:
        return JSONResponse(
            {"error": {"code": exc.code, "message": exc.message}}, status_code=exc.status
        )

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return JSONResponse(
            {"error": {"code": code, "message": str(exc.detail)}},
            status_code=exc.status_code,
            headers=exc.headers,
        )

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        # FastAPI's own 422 (``detail``: each field and why), plus the one error shape.
        errors = exc.errors()
        first = errors[0] if errors else {"loc": (), "msg": "invalid request"}
        where = ".".join(str(p) for p in first.get("loc", ())) or "body"
        message = f"{where}: {first.get('msg', 'invalid')}"
        detail = [
            {k: v for k, v in error.items() if k in ("loc", "msg", "type")} for error in errors
        ]
        return JSONResponse(
            {"error": {"code": "invalid_request", "message": message}, "detail": detail},
            status_code=422,
        )

    app.include_router(api_router(ctx, links))
    app.include_router(events_router(ctx, streams))
    app.include_router(web_router(ctx))
    app.add_middleware(Guard, ctx=ctx)
    return app


async def aclose_app(app: FastAPI) -> None:
    """End the app's event streams and close its pooled connections (the server stops)."""
    app.state.streams.end_all()
    await app.state.links.aclose()
    await stop_sampling(app.state.ctx)
