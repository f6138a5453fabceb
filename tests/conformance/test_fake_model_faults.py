"""The fake Messages API answers one model with a fault, in the real API's error shape, while
the others answer (what the fallback tests stand on)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from conformance.fake_api import FakeAnthropic, Fault, Reply


def _post(api: FakeAnthropic, model: str) -> tuple[int, dict[str, Any], str | None]:
    body = {"model": model, "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]}
    request = urllib.request.Request(
        f"{api.base_url}/v1/messages",
        data=json.dumps(body).encode(),
        headers={"x-api-key": "k", "content-type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read()), response.headers["request-id"]
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read()), err.headers["request-id"]


@pytest.mark.parametrize(
    ("fault", "error_type", "message"),
    [
        (Fault(status=529), "overloaded_error", "Overloaded"),
        (Fault(status=404), "not_found_error", "model: claude-opus-5"),
        (Fault(status=500), "api_error", "Internal server error"),
    ],
)
def test_one_model_faults_and_another_answers(fault: Fault, error_type: str, message: str) -> None:
    with FakeAnthropic([Reply(text="from the other model")]) as api:
        api.model_faults["claude-opus-5"] = fault
        status, body, request_id = _post(api, "claude-opus-5")
        assert status == fault.status
        assert body == {
            "type": "error",
            "error": {"type": error_type, "message": message},
            "request_id": request_id,
        }
        status, body, _ = _post(api, "claude-sonnet-4-6")
        assert status == 200 and body["content"][0]["text"] == "from the other model"
        assert [r.status for r in api.requests] == [fault.status, 200]


def test_an_invalid_request_is_refused_before_the_model_fault() -> None:
    with FakeAnthropic() as api:
        api.model_faults["claude-opus-5"] = Fault(status=529)
        request = urllib.request.Request(
            f"{api.base_url}/v1/messages",
            data=json.dumps({"model": "claude-opus-5", "messages": []}).encode(),
            headers={"x-api-key": "k", "content-type": "application/json"},
        )
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(request, timeout=10)
        assert caught.value.code == 400
        assert api.requests[0].valid is False
