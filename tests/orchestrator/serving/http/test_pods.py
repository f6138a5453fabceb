"""``/v1/pods`` on a host: a pod added gets the config ``pod run`` would load (the workspace's
grants refused, a mode only narrowed), is removed by DELETE, and the pooled connection lets
an idle pod unload and loads it again on the next request."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.orchestrator.serving.http.api import Api, add_pod, workspace


async def test_a_workspace_config_cannot_widen_what_a_pod_added_over_http_may_do(
    api: Api, tmp_path: Path
) -> None:
    folder = workspace(tmp_path, "cloned")
    (folder / ".pod").mkdir()
    (folder / ".pod" / "config.toml").write_text(
        '[permissions]\nmode = "yolo"\nallow = ["bash"]\n\n[host]\nhttp = "0.0.0.0:80"\n'
    )
    http = api.client()
    await add_pod(http, folder, name="c")
    status = (await http.get("/v1/pods/c")).json()
    assert status["permission_mode"] == "default"  # the repository's yolo refused
    history = (await http.get("/v1/pods/c/transcript")).json()
    assert history["total"] == 0
    warned = (await http.post("/v1/pods/c/methods/get_history", json={})).json()["data"]
    assert "permissions.mode" in str(warned) and "host" in str(warned)


async def test_a_mode_may_narrow_the_config_never_widen_it(api: Api, tmp_path: Path) -> None:
    http = api.client()
    narrow = await add_pod(http, workspace(tmp_path, "ro"), name="ro", permission_mode="read-only")
    assert (await http.get(f"/v1/pods/{narrow['name']}")).json()["permission_mode"] == "read-only"
    wide = await http.post(
        "/v1/pods", json={"workspace": str(workspace(tmp_path, "w")), "permission_mode": "yolo"}
    )
    assert wide.status_code == 422
    assert "wider" in wide.json()["error"]["message"]
    assert [p["name"] for p in (await http.get("/v1/pods")).json()["pods"]] == ["ro"]


async def test_delete_shuts_the_pod_down(api: Api, tmp_path: Path) -> None:
    http = api.client()
    await add_pod(http, workspace(tmp_path, "gone"), name="gone")
    await http.post("/v1/pods/gone/runs", json={"input": "something to keep"})
    deleted = await http.delete("/v1/pods/gone")
    assert deleted.status_code == 202 and deleted.json() == {"name": "gone"}
    for _ in range(300):
        if not (await http.get("/v1/pods")).json()["pods"]:
            break
        await asyncio.sleep(0.05)
    assert (await http.get("/v1/pods")).json()["pods"] == []
    assert (await http.get("/v1/pods/gone")).status_code == 404


async def test_an_idle_pod_unloads_and_the_next_request_loads_it(api: Api, tmp_path: Path) -> None:
    http = api.client()
    await add_pod(http, workspace(tmp_path, "lazy"), name="lazy")
    api.server.app.state.links.idle_close_s = 0.05
    await http.post("/v1/pods/lazy/runs", json={"input": "remember this"})
    for _ in range(600):
        status = (await http.get("/v1/pods/lazy")).json()
        if status["status"] == "idle" and status["turn"] == 1:
            break
        await asyncio.sleep(0.05)
    for _ in range(200):  # the API's connection is closed once unused: no client is left
        if api.host.slots["lazy"].clients == 0:
            break
        await asyncio.sleep(0.05)
    await api.host.evict("lazy")
    rows = (await http.get("/v1/pods")).json()["pods"]
    assert (rows[0]["loaded"], rows[0]["state"]) == (False, "unloaded")
    again = (await http.get("/v1/pods/lazy")).json()  # loads it, on a new connection
    assert again["turn"] == 1 and again["status"] == "idle"
    items = (await http.get("/v1/pods/lazy/transcript")).json()["items"]
    assert [i["text"] for i in items if i["kind"] == "user_message"] == ["remember this"]
    accepted = await http.post("/v1/pods/lazy/runs", json={"input": "and this"})
    assert accepted.status_code == 202
