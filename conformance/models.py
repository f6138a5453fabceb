"""The fake API's models: their limits, and the Models API's JSON for them.

A :class:`ModelSpec` holds what the fake needs to know about a model: the context window a
prompt must fit in (``max_input_tokens``), the largest ``max_tokens``, and the shortest
prefix the prompt cache keeps. ``GET /v1/models/{id}`` answers a configured model's
``ModelInfo``; a Messages request for a model nobody configured is still served, with the
limits of :func:`spec_for` (a Sonnet-class model).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.validation import Rejected

__all__ = [
    "DEFAULT_MODELS",
    "ModelSpec",
    "load_models",
    "model_page",
    "spec_for",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelSpec:
    """One model the fake knows: its limits and how the Models API describes it."""

    id: str
    display_name: str = ""
    """Defaults to the id."""
    context_window: int = 200_000
    """The most input tokens a request may have (``ModelInfo.max_input_tokens``)."""
    max_tokens: int = 64_000
    """The largest ``max_tokens`` (``ModelInfo.max_tokens``)."""
    min_cacheable_tokens: int = 1_024
    """A prefix shorter than this is never cached (1,024 for Sonnet-class models)."""
    created_at: str = "2025-01-01T00:00:00Z"
    line: str | None = None
    thinking: frozenset[str] | None = None
    """The ``thinking.type`` values it accepts (``adaptive``, ``enabled``, ``disabled``); None:
    the Models API describes no capabilities and any is served."""
    efforts: frozenset[str] | None = None
    """The ``output_config.effort`` levels it accepts; None: not described, any is served."""
    web_search: bool = False
    """What ``capabilities.server_tools.web_search`` says (listed only with ``thinking``); also
    true when ``server_tools`` holds a ``web_search_*`` version."""
    server_tools: frozenset[str] | None = None
    """The server tool types a Messages request for it may declare (``web_search_20250305``,
    ``web_fetch_20250910``...); None: every version the SDK knows."""

    def info(self) -> dict[str, Any]:
        """The model as ``GET /v1/models/{id}`` returns it (``anthropic.types.ModelInfo``)."""
        return {
            "type": "model",
            "id": self.id,
            "display_name": self.display_name or self.id,
            "created_at": self.created_at,
            "max_input_tokens": self.context_window,
            "max_tokens": self.max_tokens,
            "lifecycle": "active",
            "line": self.line,
            "capabilities": self.capabilities(),
            "deprecated_at": None,
            "retires_at": None,
        }

    def capabilities(self) -> dict[str, Any] | None:
        """``ModelInfo.capabilities`` as the Models API lists it (None when undescribed)."""
        if self.thinking is None:
            return None

        def support(ok: bool) -> dict[str, bool]:
            return {"supported": ok}

        levels = self.efforts or frozenset()
        tools = self.server_tools or ()
        search = self.web_search or any(t.startswith("web_search_") for t in tools)
        return {
            "batch": support(True),
            "citations": support(True),
            "code_execution": support(False),
            "context_management": {"supported": False},
            "effort": {"supported": bool(levels)}
            | {level: support(level in levels) for level in EFFORT_LEVELS},
            "image_input": support(True),
            "pdf_input": support(True),
            "server_tools": {
                "supported": search,
                "code_execution": support(False),
                "web_search": support(search),
            },
            "structured_outputs": support(True),
            "thinking": {
                "supported": bool(self.thinking - {"disabled"}),
                "types": {
                    kind: support(kind in self.thinking)
                    for kind in ("adaptive", "enabled", "disabled", "between_tools")
                },
            },
        }


EFFORT_LEVELS = ("low", "medium", "high", "xhigh", "max")
_ALL_EFFORTS = frozenset(EFFORT_LEVELS)
DEFAULT_MODELS: tuple[ModelSpec, ...] = (
    ModelSpec(
        id="claude-sonnet-4-5",
        display_name="Claude Sonnet 4.5",
        created_at="2025-09-29T00:00:00Z",
        line="sonnet",
        thinking=frozenset({"enabled", "disabled"}),
        efforts=frozenset(),
    ),
    # Thinking as the newest models take it: adaptive only, off is refused.
    ModelSpec(
        id="claude-opus-5",
        display_name="Claude Opus 5",
        min_cacheable_tokens=4_096,
        created_at="2026-06-01T00:00:00Z",
        line="opus",
        thinking=frozenset({"adaptive"}),
        efforts=_ALL_EFFORTS,
    ),
    ModelSpec(
        id="claude-sonnet-4-6",
        display_name="Claude Sonnet 4.6",
        created_at="2026-02-17T00:00:00Z",
        line="sonnet",
        thinking=frozenset({"adaptive", "enabled", "disabled"}),
        efforts=frozenset({"low", "medium", "high", "max"}),
    ),
    # A model that does not think at all, nor take the server tools. The others list no web
    # search in their capabilities (a pod on "auto" declares none) and take any version.
    ModelSpec(
        id="claude-3-5-haiku",
        display_name="Claude Haiku 3.5",
        min_cacheable_tokens=2_048,
        created_at="2024-10-22T00:00:00Z",
        line="haiku",
        thinking=frozenset({"disabled"}),
        efforts=frozenset(),
        server_tools=frozenset(),
    ),
    ModelSpec(
        id="claude-haiku-4-5",
        display_name="Claude Haiku 4.5",
        min_cacheable_tokens=4_096,
        created_at="2025-10-15T00:00:00Z",
        line="haiku",
    ),
    ModelSpec(
        id="claude-opus-4-5",
        display_name="Claude Opus 4.5",
        min_cacheable_tokens=4_096,
        created_at="2025-11-24T00:00:00Z",
        line="opus",
    ),
    # The model the kit and the tests start pods with: a Sonnet-class stand-in.
    ModelSpec(id="fake-model", display_name="Fake model", created_at="2025-01-01T00:00:00Z"),
)
"""What a fake serves unless told otherwise (published limits, as of late 2025)."""


def spec_for(models: Mapping[str, ModelSpec], model: str) -> ModelSpec:
    """The limits a Messages request for ``model`` gets: its spec, or a Sonnet-class default."""
    return models.get(model) or ModelSpec(id=model)


def model_page(models: Iterable[ModelSpec], query: Mapping[str, str]) -> dict[str, Any]:
    """``GET /v1/models``: newest first, paged by ``limit``, ``after_id`` and ``before_id``."""
    listed = sorted(models, key=lambda spec: spec.created_at, reverse=True)
    ids = [spec.id for spec in listed]
    try:
        limit = int(query.get("limit", "20"))
    except ValueError:
        raise Rejected(
            400, "invalid_request_error", "limit: Input should be a valid integer"
        ) from None
    if not 1 <= limit <= 1000:
        raise Rejected(400, "invalid_request_error", "limit: Input should be between 1 and 1000")
    start, stop = 0, len(listed)
    for name in ("after_id", "before_id"):
        cursor = query.get(name)
        if cursor is None:
            continue
        if cursor not in ids:
            raise Rejected(404, "not_found_error", f"{name}: {cursor}")
        if name == "after_id":
            start = ids.index(cursor) + 1
        else:
            stop = ids.index(cursor)
    window = listed[start:stop]
    page = window[-limit:] if "before_id" in query and "after_id" not in query else window[:limit]
    return {
        "data": [spec.info() for spec in page],
        "has_more": len(page) < len(window),
        "first_id": page[0].id if page else None,
        "last_id": page[-1].id if page else None,
    }


def load_models(path: str | Path) -> list[ModelSpec]:
    """Read a JSON list of models, each an object of :class:`ModelSpec` fields.

    Raises ``ValueError`` saying which entry is wrong.
    """
    data = json.loads(Path(path).read_text())
    if not isinstance(data, list):
        raise ValueError(f"{path}: a models file is a JSON list of objects")
    specs: list[ModelSpec] = []
    for n, item in enumerate(data):
        if not isinstance(item, dict):
            raise ValueError(f"{path}: entry {n} is not an object")
        try:
            for name in ("thinking", "efforts", "server_tools"):  # JSON lists, as sets
                if isinstance(item.get(name), list):
                    item[name] = frozenset(item[name])
            specs.append(ModelSpec(**item))
        except TypeError as err:
            raise ValueError(f"{path}: entry {n}: {err}") from None
    return specs
