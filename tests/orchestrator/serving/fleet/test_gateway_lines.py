"""The gateway's rewriting of the lines it sends again after a host was lost, and of the
pod's replies to them (pure functions; the module needs Ray installed, not running)."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("ray", reason="the fleet extra (Ray) is not installed")

from orchestrator.protocol import decode_event, encode_event
from orchestrator.serving.fleet.gateway import tag_replay, untag_replies


def _lines(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in data.splitlines()]


def test_a_duplicate_answering_the_gateway_s_replay_becomes_an_alert() -> None:
    replays: dict[str, Any] = {}
    line = b'{"method": "run", "params": {"input": "hi", "request_id": "r1"}}\n'
    sent = json.loads(tag_replay(line, replays))
    (tag,) = replays
    assert sent["id"] == tag and sent["params"]["request_id"] == "r1"
    duplicate = encode_event("error", {"code": "duplicate", "message": "committed", "id": tag})
    before = encode_event("status", {"status": "paused", "state": "paused"})
    out = untag_replies(before + duplicate, replays)
    first, second = out.splitlines()
    assert decode_event(first).event == "status"
    alert = decode_event(second)
    assert alert.event == "alert" and alert.data["level"] == "info"
    assert "not run again" in alert.data["message"]
    assert replays == {}  # answered: nothing left to rewrite


def test_other_replies_to_a_replayed_line_get_the_client_s_id_back() -> None:
    replays: dict[str, Any] = {}
    tag_replay(b'{"method": "run", "id": 7, "params": {"input": "hi"}}\n', replays)
    (tag,) = replays
    refused = encode_event("error", {"code": "already_running", "message": "busy", "id": tag})
    assert _lines(untag_replies(refused, replays)) == [
        {"event": "error", "data": {"code": "already_running", "message": "busy", "id": 7}}
    ]
    # Lines that answer nothing of the gateway's pass byte for byte.
    delta = encode_event("text_delta", {"text": "gw-replay- in a reply"})
    assert untag_replies(delta, replays) == delta


def test_a_line_that_is_not_json_is_sent_again_unchanged() -> None:
    replays: dict[str, Any] = {}
    assert tag_replay(b"not json\n", replays) == b"not json\n"
    assert replays == {}
