"""The endpoints that read rather than generate: token counts and the Models API.

Each answer is a pure function of the request and the configured models; the server records
the exchange and writes the JSON.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeAlias
from urllib.parse import parse_qs, unquote

from conformance.models import ModelSpec, model_page
from conformance.tokens import count_input_tokens
from conformance.validation import Rejected, check_api_key, validate_request

__all__ = ["Route", "lookup", "route_of"]

Route: TypeAlias = Literal["messages", "count_tokens", "models", "model"]

_ROUTES: dict[tuple[str, str], Route] = {
    ("POST", "/v1/messages"): "messages",
    ("POST", "/v1/messages/count_tokens"): "count_tokens",
    ("GET", "/v1/models"): "models",
}
_MODEL_PATH = "/v1/models/"


def route_of(method: str, path: str) -> Route | None:
    """Which endpoint an HTTP method and path (no query, no trailing slash) reach, if any."""
    if method == "GET" and path.startswith(_MODEL_PATH) and len(path) > len(_MODEL_PATH):
        return "model"
    return _ROUTES.get((method, path))


def lookup(
    route: Route,
    path: str,
    query: str,
    headers: dict[str, str],
    body: Any,
    *,
    models: Mapping[str, ModelSpec],
    check_signatures: bool,
) -> dict[str, Any]:
    """The JSON answer of ``count_tokens``, ``models`` or ``model``; raises :class:`Rejected`."""
    if route == "count_tokens":
        validate_request(headers, body, check_signatures=check_signatures, counting=True)
        return {"input_tokens": count_input_tokens(body)}
    check_api_key(headers)
    if route == "models":
        fields = {name: values[-1] for name, values in parse_qs(query).items()}
        return model_page(models.values(), fields)
    model = unquote(path.removeprefix(_MODEL_PATH))
    spec = models.get(model)
    if spec is None:
        raise Rejected(404, "not_found_error", f"model: {model}")
    return spec.info()
