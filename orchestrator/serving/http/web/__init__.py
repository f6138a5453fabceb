"""The web page's routes (issue 46 §3): owned by the page's own work; empty until it lands."""

from __future__ import annotations

from fastapi import APIRouter

from orchestrator.serving.http.context import HttpContext

__all__ = ["web_router"]


def web_router(ctx: HttpContext) -> APIRouter:
    """The page's routes (``GET /``, ``/static/``, the charts); none yet."""
    return APIRouter()
