"""The ``/v1`` routes: pods, runs, pause/resume/cancel, approvals, requests for input, any
protocol method, the transcript (docs/http.md). The events stream is :mod:`.events`."""

from __future__ import annotations

import asyncio
import uuid
from typing import Annotated, Any

from fastapi import APIRouter, Body, Path, Query
from pydantic import ValidationError

from orchestrator.protocol import PARAMS_BY_METHOD, CompactParams, RewindParams
from orchestrator.serving.host.control import HostStats, PodRow
from orchestrator.serving.http.bodies import ApprovalBody, ElicitationBody, RunBody
from orchestrator.serving.http.context import AddPod, ApiError, HttpContext
from orchestrator.serving.http.links import PodLinks
from orchestrator.serving.transport import REPLYING_METHODS

__all__ = ["OVER_HTTP_REFUSED", "api_router"]

PodName = Annotated[str, Path(min_length=1, max_length=64, description="The pod's name.")]
CallId = Annotated[str, Path(min_length=1, max_length=200)]

OVER_HTTP_REFUSED = {
    "subscribe": "read GET /v1/pods/{name}/events (with Last-Event-ID) instead",
    "offer_client_io": "an editor's files are served over the pod's socket, not over HTTP",
    "client_io_result": "an editor's files are served over the pod's socket, not over HTTP",
}
"""Methods that mean something only on a connection a client keeps (this API's pooled one is
shared and reads no events)."""

_tasks: set[asyncio.Task[Any]] = set()


def _ok() -> dict[str, bool]:
    return {"ok": True}


def _reply_data(data: dict[str, Any]) -> dict[str, Any]:
    """A direct reply's data without the id of the API's own request."""
    return {key: value for key, value in data.items() if key != "id"}


def api_router(ctx: HttpContext, links: PodLinks) -> APIRouter:
    """The routes, on ``ctx``'s pods through ``links``."""
    router = APIRouter(prefix="/v1")

    @router.get("/pods", tags=["pods"])
    async def list_pods() -> dict[str, Any]:
        """Every pod (loaded or not) and the host's memory (null for one pod)."""
        pods: list[PodRow] = await ctx.pods()
        host: HostStats | None = await ctx.host_stats()
        return {
            "pods": [row.model_dump() for row in pods],
            "host": host.model_dump() if host is not None else None,
        }

    @router.post("/pods", status_code=201, tags=["pods"])
    async def add_pod(body: AddPod) -> PodRow:
        """Add a workspace's pod, with the config ``pod host`` would load for it."""
        if ctx.add_pod is None:
            raise ApiError(405, "not_a_host", "this server serves one pod; start `pod host --http`")
        return await ctx.add_pod(body)

    @router.get("/pods/{name}", tags=["pods"])
    async def get_pod(name: PodName) -> dict[str, Any]:
        """The pod's ``status`` (``get_status``)."""
        return _reply_data((await links.call(name, "get_status", {})).data)

    @router.delete("/pods/{name}", status_code=202, tags=["pods"])
    async def delete_pod(name: PodName) -> dict[str, str]:
        """Shut the pod down (its session is kept)."""
        ctx.socket_for(name)  # 404 for an unknown pod, before anything is started
        await links.forget(name)

        async def remove() -> None:
            await ctx.remove_pod(name)

        task = asyncio.create_task(remove())
        _tasks.add(task)
        task.add_done_callback(_tasks.discard)
        return {"name": name}

    @router.post("/pods/{name}/runs", status_code=202, tags=["runs"])
    async def run(name: PodName, body: RunBody) -> dict[str, str]:
        """Submit input (``run``); 202 once the pod took it, with its request id."""
        request_id = body.request_id or str(uuid.uuid4())
        params = {
            "segments": [segment.model_dump(mode="json") for segment in body.segments],
            "request_id": request_id,
        }
        await links.submit(name, "run", params)
        return {"request_id": request_id}

    for method in ("pause", "resume", "cancel"):
        _add_plain(router, links, method)

    @router.post("/pods/{name}/compact", status_code=202, tags=["runs"])
    async def compact(
        name: PodName, body: Annotated[CompactParams | None, Body()] = None
    ) -> dict[str, bool]:
        """Compact the history now, or at the running turn's next round boundary."""
        params = body.model_dump(exclude_unset=True) if body is not None else {}
        await links.submit(name, "compact", params)
        return _ok()

    @router.post("/pods/{name}/rewind", tags=["runs"])
    async def rewind(name: PodName, body: RewindParams) -> dict[str, Any]:
        """Go back to before a user message; with ``dry_run``, only the preview."""
        params = body.model_dump(exclude_unset=True)
        if body.dry_run:
            return _reply_data((await links.call(name, "rewind", params)).data)
        await links.submit(name, "rewind", params)
        return _ok()

    @router.post("/pods/{name}/approvals/{call_id}", tags=["approvals"])
    async def approval(name: PodName, call_id: CallId, body: ApprovalBody) -> dict[str, bool]:
        """Approve or deny a tool call that waits for approval."""
        method, params = body.params(call_id)
        await links.submit(name, method, params)
        return _ok()

    @router.post("/pods/{name}/elicitations/{input_id}", tags=["approvals"])
    async def elicitation(
        name: PodName, input_id: CallId, body: ElicitationBody
    ) -> dict[str, bool]:
        """Answer an MCP server's request for input."""
        try:
            params = body.params(input_id)
        except ValidationError as exc:
            raise ApiError(422, "invalid_request", str(exc.errors()[0]["msg"])) from None
        await links.submit(name, "answer_elicitation", params)
        return _ok()

    @router.post("/pods/{name}/methods/{method}", tags=["methods"])
    async def any_method(
        name: PodName,
        method: Annotated[str, Path(max_length=64)],
        body: Annotated[dict[str, Any] | None, Body()] = None,
    ) -> dict[str, Any]:
        """Any protocol method with its params (docs/protocol.md): its direct reply as
        ``{"event", "data"}``, or ``{"ok": true}`` for one that has none."""
        model = PARAMS_BY_METHOD.get(method)
        if model is None:
            raise ApiError(404, "unknown_method", f"no protocol method {method!r}")
        if method in OVER_HTTP_REFUSED:
            raise ApiError(422, "invalid_request", f"{method}: {OVER_HTTP_REFUSED[method]}")
        params = body or {}
        try:
            parsed = model.model_validate(params)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "params"
            raise ApiError(422, "invalid_request", f"{method}: {where}: {first['msg']}") from None
        # The protocol's one table of methods answered by a reply of their own (the SDK's
        # too); the others are answered only when refused, or ``rewind`` with ``dry_run``.
        if method not in REPLYING_METHODS and not getattr(parsed, "dry_run", False):
            await links.submit(name, method, params)
            return _ok()
        reply = await links.call(name, method, params)
        return {"event": reply.event, "data": _reply_data(reply.data)}

    @router.get("/pods/{name}/transcript", tags=["pods"])
    async def transcript(
        name: PodName,
        offset: Annotated[int, Query(ge=0)] = 0,
        limit: Annotated[int, Query(ge=1, le=500)] = 100,
    ) -> dict[str, Any]:
        """The committed conversation (``get_history``), a page at a time."""
        items = (await links.call(name, "get_history", {})).data.get("items", [])
        return {"items": items[offset : offset + limit], "offset": offset, "total": len(items)}

    return router


def _add_plain(router: APIRouter, links: PodLinks, method: str) -> None:
    """``POST /v1/pods/{name}/<method>``: a method without params (an empty body or none)."""

    async def plain(
        name: PodName, body: Annotated[dict[str, Any] | None, Body()] = None
    ) -> dict[str, bool]:
        if body:
            raise ApiError(422, "invalid_request", f"{method} takes no parameters")
        await links.submit(name, method, {})
        return _ok()

    plain.__doc__ = f"``{method}`` the pod; 409 with the machine's refusal code."
    router.add_api_route(
        f"/pods/{{name}}/{method}", plain, methods=["POST"], name=method, tags=["runs"]
    )
