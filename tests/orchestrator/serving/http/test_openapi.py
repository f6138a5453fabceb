"""``/openapi.json`` is generated (never written by hand), valid OpenAPI 3, behind the token,
and names every field of the bodies from the protocol's own models."""

from __future__ import annotations

from typing import Any

from openapi_spec_validator import validate

from orchestrator.protocol import ApproveParams, RewindParams, RunParams
from tests.orchestrator.serving.http.api import Api


def _schema(spec: dict[str, Any], path: str, method: str = "post") -> dict[str, Any]:
    body = spec["paths"][path][method]["requestBody"]["content"]["application/json"]["schema"]
    ref = body.get("$ref") or next(
        option["$ref"] for option in body.get("anyOf", []) if "$ref" in option
    )
    return spec["components"]["schemas"][ref.rsplit("/", 1)[1]]  # type: ignore[no-any-return]


async def test_the_openapi_document_is_valid_and_names_the_bodies_fields(api: Api) -> None:
    assert (await api.client(token=None).get("/openapi.json")).status_code == 401
    spec = (await api.client().get("/openapi.json")).json()
    validate(spec)  # raises on anything OpenAPI 3 does not allow
    assert spec["openapi"].startswith("3.")
    run = _schema(spec, "/v1/pods/{name}/runs")
    assert set(run["properties"]) == set(RunParams.model_fields) | {"text"}
    rewind = _schema(spec, "/v1/pods/{name}/rewind")
    assert set(rewind["properties"]) == set(RewindParams.model_fields)
    approval = _schema(spec, "/v1/pods/{name}/approvals/{call_id}")
    assert {"decision", "scope", "mode", "message"} <= set(approval["properties"])
    assert approval["properties"]["scope"]["enum"] == list(
        ApproveParams.model_fields["scope"].annotation.__args__  # type: ignore[union-attr]
    )
    add = _schema(spec, "/v1/pods")
    assert {"workspace", "name", "model", "permission_mode", "continue"} <= set(add["properties"])
    expected = {
        ("get", "/v1/pods"),
        ("post", "/v1/pods"),
        ("get", "/v1/pods/{name}"),
        ("delete", "/v1/pods/{name}"),
        ("post", "/v1/pods/{name}/runs"),
        ("post", "/v1/pods/{name}/pause"),
        ("post", "/v1/pods/{name}/resume"),
        ("post", "/v1/pods/{name}/cancel"),
        ("post", "/v1/pods/{name}/compact"),
        ("post", "/v1/pods/{name}/rewind"),
        ("post", "/v1/pods/{name}/approvals/{call_id}"),
        ("post", "/v1/pods/{name}/elicitations/{input_id}"),
        ("post", "/v1/pods/{name}/methods/{method}"),
        ("get", "/v1/pods/{name}/events"),
        ("get", "/v1/pods/{name}/transcript"),
    }
    routes = {(m, p) for p, methods in spec["paths"].items() for m in methods}
    assert expected <= routes
