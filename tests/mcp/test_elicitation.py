"""What a request for input becomes for the pod's clients (form or URL)."""

from __future__ import annotations

from mcp import types

from orchestrator.adapters.mcp.elicitation import request_data


def test_a_form_request_carries_its_schema_and_the_call_it_came_during() -> None:
    schema: types.ElicitRequestedSchema = {
        "type": "object",
        "properties": {"token": {"type": "string"}},
        "required": ["token"],
    }
    params = types.ElicitRequestFormParams(message="Token?", requested_schema=schema)
    data = request_data("auth", params, "mcp__auth__login")
    assert data.id.startswith("input_")
    assert (data.server, data.message, data.mode, data.tool) == (
        "auth",
        "Token?",
        "form",
        "mcp__auth__login",
    )
    assert (data.schema_, data.url) == (schema, None)
    assert request_data("auth", params, None).id != data.id  # each request its own id


def test_a_url_request_carries_the_page_and_no_schema() -> None:
    params = types.ElicitRequestURLParams(
        message="Sign in", url="https://auth.example/device", elicitation_id="e1"
    )
    data = request_data("auth", params, None)
    assert (data.mode, data.url, data.schema_) == ("url", "https://auth.example/device", None)
    line = data.model_dump(by_alias=True)
    assert line["schema"] is None and line["url"] == "https://auth.example/device"
