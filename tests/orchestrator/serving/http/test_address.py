"""``--http``'s ``[HOST:]PORT``, the ``Host`` values a server answers to, the keep-alive
comments of an idle stream, and ``_http.json``'s mode."""

from __future__ import annotations

import asyncio
import stat
from pathlib import Path

import pytest

from orchestrator.serving.http import events
from orchestrator.serving.http.address import (
    HttpAddress,
    HttpAddressError,
    parse_http_address,
    read_http_info,
    remove_http_info,
    write_http_info,
)
from orchestrator.serving.http.context import allowed_hosts
from tests.orchestrator.serving.http.api import Api, add_pod, workspace


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("8765", HttpAddress("127.0.0.1", 8765)),
        ("0", HttpAddress("127.0.0.1", 0)),
        ("localhost:80", HttpAddress("127.0.0.1", 80)),
        ("127.0.0.2:1", HttpAddress("127.0.0.2", 1)),
        ("[::1]:9000", HttpAddress("::1", 9000)),
    ],
)
def test_loopback_addresses_parse(given: str, expected: HttpAddress) -> None:
    assert parse_http_address(given) == expected


@pytest.mark.parametrize(
    "given", ["", ":", "host:80", "127.0.0.1:-1", "127.0.0.1:65536", "[::1]9000", "1.2.3.4.5:1"]
)
def test_what_is_no_address_is_refused(given: str) -> None:
    with pytest.raises(HttpAddressError, match="--http"):
        parse_http_address(given)


def test_beyond_the_loopback_needs_public() -> None:
    with pytest.raises(HttpAddressError, match="--http-public"):
        parse_http_address("0.0.0.0:8765")
    assert parse_http_address("0.0.0.0:8765", public=True) == HttpAddress("0.0.0.0", 8765)
    assert not HttpAddress("0.0.0.0", 1).loopback


def test_the_host_names_a_server_answers_to() -> None:
    assert allowed_hosts("127.0.0.1", 80) == {"127.0.0.1:80", "localhost:80", "[::1]:80"}
    assert allowed_hosts("::1", 80) == {"127.0.0.1:80", "localhost:80", "[::1]:80"}
    assert allowed_hosts("192.0.2.7", 80) == {"192.0.2.7:80"}  # no name a page could rebind


def test_http_json_is_private_and_only_its_writer_removes_it(tmp_path: Path) -> None:
    path = tmp_path / "_http.json"
    path.write_text("stale, world-readable")
    path.chmod(0o644)
    write_http_info(path, "http://127.0.0.1:1", "t1")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    info = read_http_info(path)
    assert info is not None and (info["url"], info["token"]) == ("http://127.0.0.1:1", "t1")
    remove_http_info(path, "another server's token")
    assert path.exists()
    remove_http_info(path, "t1")
    assert not path.exists()
    link = tmp_path / "link.json"
    link.symlink_to(tmp_path / "elsewhere")
    write_http_info(link, "http://127.0.0.1:1", "t2")  # the link itself is replaced
    assert not (tmp_path / "elsewhere").exists() and not link.is_symlink()


async def test_an_idle_stream_gets_keep_alive_comments(
    api: Api, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(events, "KEEPALIVE_S", 0.2)
    http = api.client()
    await add_pod(http, workspace(tmp_path, "quiet"), name="q")
    async with http.stream("GET", "/v1/pods/q/events") as response:
        assert response.status_code == 200
        assert response.headers["cache-control"] == "no-store"
        seen = ""

        async def read() -> None:
            nonlocal seen
            async for text in response.aiter_text():
                seen += text
                if seen.count(": keep-alive") >= 2:
                    return

        await asyncio.wait_for(read(), 30)
    assert "event:" not in seen  # nothing happened: only the comments came


def test_no_pod_name_shares_a_file_with_the_apis_info(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pod named ``http`` (or ``solo.sock.http``) keeps its ``pod ls`` info file; the API's token
    is never written over it, nor it over the token."""
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    from orchestrator.config.paths import default_socket, pod_info_path, runtime_dir
    from orchestrator.serving.http.address import host_http_info_path, pod_http_info_path

    pods = {pod_info_path(default_socket(name)) for name in ("http", "solo.sock", "solo.sock.http")}
    served = pod_http_info_path(default_socket("solo"))
    assert host_http_info_path() not in pods and served not in pods
    assert host_http_info_path().parent == served.parent == runtime_dir()
