"""The protocol's error codes as exceptions: one class per code under one root."""

from __future__ import annotations

from typing import get_args

import pytest

from orchestrator.protocol import ErrorCode, StatusData
from orchestrator.serving.client_errors import (
    ERRORS_BY_CODE,
    ClientError,
    NotRunning,
    PodRequestError,
    request_error,
)
from orchestrator.serving.client_events import PodEvent


@pytest.mark.parametrize("code", get_args(ErrorCode))
def test_every_protocol_code_has_its_own_class(code: str) -> None:
    error = request_error(code, "why")
    assert type(error) is ERRORS_BY_CODE[code] and type(error) is not PodRequestError
    assert isinstance(error, ClientError) and error.code == code
    assert str(error) == f"the pod refused: {code}: why" and error.reason == "why"


def test_a_newer_pods_code_is_still_a_refusal_with_its_word() -> None:
    error = request_error("over_quota", "later")
    assert type(error) is PodRequestError and error.code == "over_quota"
    assert "over_quota: later" in str(error)


def test_an_error_reply_raises_its_class() -> None:
    event = PodEvent("error", {"code": "not_running", "message": "idle", "id": 3})
    with pytest.raises(NotRunning, match="not_running: idle"):
        event.expect(StatusData)
