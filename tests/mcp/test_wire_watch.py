"""The wire watch judges what a server sends: answers to requests never made and JSON that is
not JSON-RPC are breaches; lines that are not JSON are counted noise."""

from __future__ import annotations

import logging

import pytest
from mcp import types
from mcp.client.stdio import _parse_line
from mcp.shared.message import SessionMessage

from orchestrator.adapters.mcp.wire_watch import MAX_TRACKED_REQUESTS, NOISE_LOGGED_FIRST, WireWatch


class Seen:
    def __init__(self) -> None:
        self.breaches: list[str] = []
        self.noise_alerts = 0

    def watch(self) -> WireWatch:
        def noisy() -> None:
            self.noise_alerts += 1

        return WireWatch("srv", on_breach=self.breaches.append, on_noise=noisy)


def request(request_id: int | str, method: str = "tools/call") -> SessionMessage:
    return SessionMessage(types.JSONRPCRequest(jsonrpc="2.0", id=request_id, method=method))


def response(request_id: int | str | None) -> SessionMessage:
    return SessionMessage(types.JSONRPCResponse(jsonrpc="2.0", id=request_id, result={}))  # type: ignore[arg-type]


def line(text: str) -> SessionMessage | Exception:
    """A stdout line as the SDK's stdio transport hands it on."""
    return _parse_line(text)


def test_the_answer_to_a_request_sent_passes_and_is_then_forgotten() -> None:
    seen = Seen()
    watch = seen.watch()
    watch.sent(request(7))
    assert watch.received(response(7))
    assert not watch.received(response(7))  # a second answer to it is for no request
    assert seen.breaches == [
        "answered with a response for another request (id 7, which the pod never sent)"
    ]


def test_an_id_the_pod_never_sent_is_a_breach_named_once() -> None:
    seen = Seen()
    watch = seen.watch()
    watch.sent(request(1))
    assert not watch.received(response(987654))
    assert not watch.received(response(55))
    assert len(seen.breaches) == 1 and "id 987654" in seen.breaches[0]
    assert watch.breach == seen.breaches[0]


def test_a_null_id_error_is_a_breach_that_quotes_the_server() -> None:
    seen = Seen()
    watch = seen.watch()
    watch.sent(request(1))
    item = line('{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"it went wrong"}}')
    assert not watch.received(item)
    assert seen.breaches == ["answered with a response for no request (a null id): it went wrong"]


def test_json_that_is_not_json_rpc_is_a_breach_showing_what_came() -> None:
    seen = Seen()
    watch = seen.watch()
    assert not watch.received(line('{"status": "ok", "answer": 42}'))
    assert seen.breaches == ['sent a line that is not JSON-RPC: {"status": "ok", "answer": 42}']


def test_ids_match_whether_sent_as_numbers_or_strings() -> None:
    seen = Seen()
    watch = seen.watch()
    watch.sent(request("12"))
    assert watch.received(response(12))
    assert seen.breaches == []


def test_requests_and_notifications_from_the_server_pass() -> None:
    seen = Seen()
    watch = seen.watch()
    assert watch.received(request(1, "roots/list"))
    assert watch.received(line('{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}'))
    assert seen.breaches == []


def test_noise_is_counted_sampled_and_alerted_once(caplog: pytest.LogCaptureFixture) -> None:
    seen = Seen()
    watch = seen.watch()
    with caplog.at_level(logging.WARNING, logger="orchestrator.adapters.mcp.wire_watch"):
        for number in range(1000):
            assert not watch.received(line(f"compiling {number}..."))
    assert watch.noise == 1000 and seen.noise_alerts == 1 and seen.breaches == []
    samples = [r.getMessage() for r in caplog.records]
    assert len(samples) == NOISE_LOGGED_FIRST
    assert samples[0] == "MCP server srv wrote to stdout: compiling 0..."


def test_the_sdk_logs_no_traceback_per_unparsable_line(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="mcp.client.stdio"):
        for _ in range(3):
            line("not json")
    assert [r for r in caplog.records if r.name == "mcp.client.stdio"] == []


def test_requests_never_answered_are_remembered_within_a_bound() -> None:
    seen = Seen()
    watch = seen.watch()
    for request_id in range(MAX_TRACKED_REQUESTS + 10):
        watch.sent(request(request_id))
    assert watch.received(response(MAX_TRACKED_REQUESTS + 9))
    assert not watch.received(response(0))  # forgotten, the oldest first
