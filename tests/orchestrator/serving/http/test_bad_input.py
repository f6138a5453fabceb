"""Issue 46 §4: every endpoint with wrong types, missing fields, huge bodies, an unknown pod,
a wrong or missing token, a wrong ``Host`` or ``Origin``: a clear 4xx in the one error shape,
and nothing changed (the pod's status and transcript, the host's pods, before == after)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx

from tests.orchestrator.serving.http.api import Api, add_pod, workspace

BIG = "x" * (2 * 1024 * 1024)

BAD: list[tuple[str, str, Any, int]] = [
    # runs
    ("POST", "/v1/pods/p/runs", {}, 422),
    ("POST", "/v1/pods/p/runs", {"input": 5}, 422),
    ("POST", "/v1/pods/p/runs", {"input": "   "}, 422),
    ("POST", "/v1/pods/p/runs", {"input": "a", "text": "b"}, 422),
    ("POST", "/v1/pods/p/runs", {"input": "a", "segments": []}, 422),
    ("POST", "/v1/pods/p/runs", {"segments": "text"}, 422),
    ("POST", "/v1/pods/p/runs", {"segments": [{"kind": "text"}]}, 422),
    ("POST", "/v1/pods/p/runs", {"input": "a", "request_id": ""}, 422),
    ("POST", "/v1/pods/p/runs", {"input": "a", "surprise": 1}, 422),
    ("POST", "/v1/pods/p/runs", [], 422),
    ("POST", "/v1/pods/p/runs", "not an object", 422),
    ("POST", "/v1/pods/p/runs", {"input": BIG}, 413),
    ("POST", "/v1/pods/nope/runs", {"input": "hello"}, 404),
    # control
    ("POST", "/v1/pods/p/pause", {"now": True}, 422),
    ("POST", "/v1/pods/p/resume", None, 409),
    ("POST", "/v1/pods/p/cancel", None, 409),
    ("POST", "/v1/pods/nope/pause", None, 404),
    ("POST", "/v1/pods/p/compact", {"focus": 3}, 422),
    ("POST", "/v1/pods/p/rewind", {"to": 0}, 422),
    ("POST", "/v1/pods/p/rewind", {"to": 99}, 422),
    ("POST", "/v1/pods/p/rewind", {"restore": "everything"}, 422),
    # approvals and requests for input
    ("POST", "/v1/pods/p/approvals/c1", {}, 422),
    ("POST", "/v1/pods/p/approvals/c1", {"decision": "maybe"}, 422),
    ("POST", "/v1/pods/p/approvals/c1", {"decision": "approve", "scope": "forever"}, 422),
    ("POST", "/v1/pods/p/approvals/c1", {"decision": "approve"}, 409),
    ("POST", "/v1/pods/p/approvals/c1", {"decision": "deny", "message": BIG}, 413),
    ("POST", "/v1/pods/p/elicitations/e1", {"action": "shrug"}, 422),
    ("POST", "/v1/pods/p/elicitations/e1", {"action": "accept", "content": {"a": {}}}, 422),
    ("POST", "/v1/pods/p/elicitations/e1", {"action": "decline"}, 409),
    # any method
    ("POST", "/v1/pods/p/methods/launch_missiles", {}, 404),
    ("POST", "/v1/pods/p/methods/run", {"input": 3}, 422),
    ("POST", "/v1/pods/p/methods/set_mode", {"mode": "godmode"}, 422),
    ("POST", "/v1/pods/p/methods/set_mode", {"mode": "yolo"}, 422),
    ("POST", "/v1/pods/p/methods/subscribe", {"after": None}, 422),
    ("POST", "/v1/pods/p/methods/offer_client_io", {"files": True}, 422),
    ("POST", "/v1/pods/p/methods/get_status", {"extra": 1}, 422),
    ("POST", "/v1/pods/nope/methods/get_status", {}, 404),
    # pods
    ("POST", "/v1/pods", {}, 422),
    ("POST", "/v1/pods", {"workspace": 5}, 422),
    ("POST", "/v1/pods", {"workspace": "/no/such/folder"}, 422),
    ("POST", "/v1/pods", {"workspace": "relative/path"}, 422),
    ("POST", "/v1/pods", {"workspace": "{ws}", "name": "../../etc"}, 422),
    ("POST", "/v1/pods", {"workspace": "{ws}", "name": "p"}, 409),
    ("POST", "/v1/pods", {"workspace": "{ws}", "permission_mode": "yolo"}, 422),
    ("POST", "/v1/pods", {"workspace": "{ws}", "permission_mode": "root"}, 422),
    ("POST", "/v1/pods", {"workspace": "{ws}", "model": "a b/../c"}, 422),
    ("POST", "/v1/pods", {"workspace": "{ws}", "config": {"sandbox": {"mode": "off"}}}, 422),
    ("GET", "/v1/pods/nope", None, 404),
    ("DELETE", "/v1/pods/nope", None, 404),
    ("GET", "/v1/pods/nope/events", None, 404),
    ("GET", "/v1/pods/p/transcript?limit=501", None, 422),
    ("GET", "/v1/pods/p/transcript?offset=-1", None, 422),
    ("GET", "/v1/pods/p/transcript?limit=ten", None, 422),
    ("GET", "/v1/nothing-here", None, 404),
    ("PUT", "/v1/pods", {}, 405),
]


async def snapshot(api: Api) -> dict[str, Any]:
    """What must not change: the pods, and the pod's state, turn and transcript."""
    http = api.client()
    status = (await http.get("/v1/pods/p")).json()
    transcript = (await http.get("/v1/pods/p/transcript", params={"limit": 500})).json()
    pods = (await http.get("/v1/pods")).json()["pods"]
    return {
        "pods": sorted((p["name"], p["workspace"]) for p in pods),
        "status": (status["status"], status["state"], status["turn"], status["approvals"]),
        "transcript": transcript["total"],
    }


async def test_each_bad_request_gets_its_4xx_and_changes_nothing(api: Api, tmp_path: Path) -> None:
    http = api.client()
    folder = workspace(tmp_path, "demo")
    await add_pod(http, folder, name="p")
    await http.post("/v1/pods/p/runs", json={"input": "one turn first"})
    await _idle(http)
    before = await snapshot(api)
    for method, path, body, status in BAD:
        if isinstance(body, dict) and body.get("workspace") == "{ws}":
            body = {**body, "workspace": str(folder)}
        kwargs: dict[str, Any] = {} if body is None else {"json": body}
        response = await http.request(method, path, **kwargs)
        assert response.status_code == status, (method, path, str(body)[:80], response.text)
        error = response.json()["error"]
        assert error["code"] and error["message"], response.text
        assert await snapshot(api) == before, (method, path)


async def test_a_body_streamed_past_the_limit_is_cut_at_it(api: Api, tmp_path: Path) -> None:
    http = api.client()
    await add_pod(http, workspace(tmp_path, "demo"), name="p")
    before = await snapshot(api)
    sent = 0

    async def chunks() -> AsyncIterator[bytes]:
        nonlocal sent
        yield b'{"input": "'
        for _ in range(64):  # 4 MiB without a Content-Length: the server counts
            sent += 65536
            yield b"y" * 65536
        yield b'"}'

    try:
        response = await http.post("/v1/pods/p/runs", content=chunks())
    except httpx.HTTPError:  # the server may close before the client finished sending
        response = None
    if response is not None:
        assert response.status_code == 413
        assert response.json()["error"]["code"] == "too_large"
    assert await snapshot(api) == before


async def test_wrong_host_and_wrong_origin_are_refused(api: Api, tmp_path: Path) -> None:
    http = api.client()
    await add_pod(http, workspace(tmp_path, "demo"), name="p")
    before = await snapshot(api)
    port = api.url.rsplit(":", 1)[1]
    # A page of another name resolving to 127.0.0.1 (DNS rebinding) sends its own Host.
    for host in ("evil.example", f"evil.example:{port}", f"127.0.0.1:{int(port) + 1}", ""):
        rebound = api.client(Host=host)
        for method, path in (("GET", "/v1/pods"), ("POST", "/v1/pods/p/runs")):
            response = await rebound.request(method, path, json={"input": "hi"})
            assert response.status_code == 421, (host, response.text)
            assert response.json()["error"]["code"] == "wrong_host"
    for host in (f"localhost:{port}", f"127.0.0.1:{port}"):
        assert (await api.client(Host=host).get("/v1/pods")).status_code == 200
    # A page of another site posting through the browser carries its Origin.
    for origin in ("http://evil.example", f"http://localhost:{int(port) + 1}", "null"):
        foreign = api.client(Origin=origin)
        for method, path, body in (
            ("POST", "/v1/pods/p/runs", {"input": "hi"}),
            ("POST", "/v1/pods/p/methods/set_mode", {"mode": "read-only"}),
            ("DELETE", "/v1/pods/p", None),
        ):
            response = await foreign.request(method, path, json=body)
            assert response.status_code == 403, (origin, path, response.text)
            assert response.json()["error"]["code"] == "wrong_origin"
        assert (await foreign.get("/v1/pods/p")).status_code == 200  # reading changes nothing
    assert await snapshot(api) == before
    same = api.client(Origin=api.url)
    assert (await same.post("/v1/pods/p/runs", json={"input": "from the page"})).status_code == 202


async def test_the_token_url_sets_a_strict_cookie_and_leaves_the_address_bar(
    api: Api, tmp_path: Path
) -> None:
    browser = api.client(token=None)
    wrong = await browser.get("/", params={"token": "guess"}, follow_redirects=False)
    assert wrong.status_code == 401
    assert "set-cookie" not in wrong.headers
    login = await browser.get("/", params={"token": api.token}, follow_redirects=False)
    assert login.status_code == 303
    assert login.headers["location"] == "/"
    cookie = login.headers["set-cookie"]
    assert cookie.startswith(f"pod_token={api.token};")
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/" in cookie
    assert (await browser.get("/v1/pods")).status_code == 200  # the cookie is kept by httpx
    # The token in a query string is no credential anywhere else.
    other = api.client(token=None)
    assert (await other.get("/v1/pods", params={"token": api.token})).status_code == 401
    assert (await other.get("/v1/pods", headers={"Cookie": "pod_token=guess"})).status_code == 401


async def test_a_slow_client_does_not_stop_another_client_s_run(api: Api, tmp_path: Path) -> None:
    http = api.client()
    await add_pod(http, workspace(tmp_path, "demo"), name="p")
    host, port = api.url.removeprefix("http://").rsplit(":", 1)
    head = (
        f"POST /v1/pods/p/runs HTTP/1.1\r\nHost: {host}:{port}\r\n"
        f"Authorization: Bearer {api.token}\r\nContent-Type: application/json\r\n"
        "Content-Length: 100\r\n\r\n"
    ).encode()
    trickle: list[asyncio.StreamWriter] = []

    async def byte_by_byte() -> None:
        _, writer = await asyncio.open_connection(host, int(port))
        trickle.append(writer)
        for byte in head:
            writer.write(bytes([byte]))
            await writer.drain()
            await asyncio.sleep(0.05)

    async def never_finishes() -> None:
        _, writer = await asyncio.open_connection(host, int(port))
        trickle.append(writer)
        writer.write(head + b'{"input": "never')
        await writer.drain()

    slow = [asyncio.create_task(byte_by_byte()) for _ in range(5)]
    slow += [asyncio.create_task(never_finishes()) for _ in range(5)]
    try:
        await asyncio.sleep(0.2)
        accepted = await http.post("/v1/pods/p/runs", json={"input": "meanwhile"})
        assert accepted.status_code == 202
        await _idle(http)
        page = (await http.get("/v1/pods/p/transcript")).json()
        said = [item["text"] for item in page["items"] if item["kind"] == "user_message"]
        assert len(said) == 1 and "meanwhile" in said[0]  # the slow ones committed nothing
    finally:
        for task in slow:
            task.cancel()
        for writer in trickle:
            writer.close()


async def _idle(http: httpx.AsyncClient) -> None:
    """Until the pod's turn is over (its status says idle)."""
    for _ in range(600):
        status = (await http.get("/v1/pods/p")).json()
        if status["status"] == "idle" and status["turn"] > 0:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"the pod never became idle: {status}")
