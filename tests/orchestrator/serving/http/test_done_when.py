"""Issue 46's "done when", with httpx only: add a pod, run a prompt and read its SSE stream
to the end, pause and resume it mid-stream, answer an approval; without the token, 401."""

from __future__ import annotations

from pathlib import Path

from tests.orchestrator.serving.http.api import Api, Stream, add_pod, workspace

ROUTES = [
    ("GET", "/v1/pods"),
    ("POST", "/v1/pods"),
    ("GET", "/v1/pods/p"),
    ("DELETE", "/v1/pods/p"),
    ("POST", "/v1/pods/p/runs"),
    ("POST", "/v1/pods/p/pause"),
    ("POST", "/v1/pods/p/resume"),
    ("POST", "/v1/pods/p/cancel"),
    ("POST", "/v1/pods/p/compact"),
    ("POST", "/v1/pods/p/rewind"),
    ("POST", "/v1/pods/p/approvals/x"),
    ("POST", "/v1/pods/p/elicitations/x"),
    ("POST", "/v1/pods/p/methods/get_status"),
    ("GET", "/v1/pods/p/events"),
    ("GET", "/v1/pods/p/transcript"),
    ("GET", "/openapi.json"),
    ("GET", "/docs"),
    ("GET", "/"),
]


async def test_a_script_drives_a_pod_of_the_host_over_http(api: Api, tmp_path: Path) -> None:
    http = api.client()
    row = await add_pod(http, workspace(tmp_path, "demo"), name="p")
    assert row["name"] == "p" and row["loaded"] is True
    listed = (await http.get("/v1/pods")).json()
    assert [pod["name"] for pod in listed["pods"]] == ["p"]
    assert listed["host"]["registered"] == 1

    stream = Stream(api.client(), "/v1/pods/p/events")
    try:
        # A prompt streamed slowly, paused mid-stream and resumed.
        accepted = await http.post("/v1/pods/p/runs", json={"text": "tell me a story slowly"})
        assert accepted.status_code == 202, accepted.text
        request_id = accepted.json()["request_id"]
        assert request_id
        await stream.until("text_delta")
        paused = await http.post("/v1/pods/p/pause")
        assert paused.json() == {"ok": True}
        await stream.until("run_end", result="paused")
        state = (await http.get("/v1/pods/p")).json()
        assert state["status"] == "paused"
        resumed = await http.post("/v1/pods/p/resume")
        assert resumed.json() == {"ok": True}
        await stream.until("run_end", result="finished")
        idle = await http.post("/v1/pods/p/pause")
        assert idle.status_code == 409
        assert idle.json()["error"]["code"] == "not_running"

        # A command the default mode asks about, approved over HTTP.
        before = len(stream.frames)
        await http.post("/v1/pods/p/runs", json={"input": "run a command"})
        ask = await stream.until("approval_request")
        assert ask.data["tool"] == "bash"
        answer = await http.post(
            f"/v1/pods/p/approvals/{ask.data['id']}", json={"decision": "approve"}
        )
        assert answer.json() == {"ok": True}, answer.text
        result = await stream.until("tool_result", id=ask.data["id"])
        assert "hello from bash" in str(result.data)
        while not [f for f in stream.frames[before:] if f.event == "run_end"]:
            await stream.until("run_end")
        assert [f.data["result"] for f in stream.frames[before:] if f.event == "run_end"] == [
            "finished"
        ]
        late = await http.post(
            f"/v1/pods/p/approvals/{ask.data['id']}", json={"decision": "approve"}
        )
        assert late.status_code == 409
        assert late.json()["error"]["code"] == "not_awaiting_approval"
        # Every broadcast frame has its id, in order, and one request's user message.
        ids = [f.id for f in stream.frames if f.event != "resync"]
        assert all(ids) and len(set(ids)) == len(ids)
        numbers = [int(i.split("-")[1]) for i in ids if i]
        assert numbers == sorted(numbers)
        page = (await http.get("/v1/pods/p/transcript", params={"limit": 500})).json()
        users = [item for item in page["items"] if item.get("request_id") == request_id]
        assert len(users) == 1
    finally:
        await stream.close()


async def test_without_the_token_every_route_is_401(api: Api, tmp_path: Path) -> None:
    await add_pod(api.client(), workspace(tmp_path, "demo"), name="p")
    before = (await api.client().get("/v1/pods/p")).json()
    for method, path in ROUTES:
        for client in (api.client(token=None), api.client(token="not-the-token")):
            response = await client.request(method, path, json={} if method == "POST" else None)
            assert response.status_code == 401, (method, path, response.text)
            assert response.json()["error"]["code"] == "unauthorized"
    after = (await api.client().get("/v1/pods/p")).json()
    assert [p["name"] for p in (await api.client().get("/v1/pods")).json()["pods"]] == ["p"]
    assert (after["state"], after["turn"]) == (before["state"], before["turn"])
