"""What the pod adds to the SDK's OAuth (orchestrator/adapters/mcp/oauth_flow.py), against
real HTTP servers on localhost: a refusal in a pod is handed back (and a step-up's scope kept
for the next login), a 2025-03-26 server cannot send the code elsewhere, a failed login is
one line, and the client-credentials secret only comes from the environment."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx2
import pytest
from mcp.client.auth import OAuthFlowError
from mcp.shared.auth import OAuthToken
from pydantic import ValidationError

from orchestrator.adapters.mcp.oauth import (
    OAuthRecord,
    TokenFile,
    login,
    stored_auth,
    token_path,
)
from orchestrator.adapters.mcp.transport import describe
from orchestrator.config.mcp import McpServerConfig

REPO = Path(__file__).resolve().parents[2]
Answer = tuple[int, dict[str, str], bytes]


class Site:
    """A localhost HTTP server answering each request with ``answer(method, path)``, and
    keeping what it was asked."""

    def __init__(self, answer: Callable[[str, str], Answer]) -> None:
        self.seen: list[tuple[str, str, str]] = []
        site = self

        class Handler(BaseHTTPRequestHandler):
            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                site.seen.append((self.command, self.path, self.headers.get("Authorization") or ""))
                status, headers, body = answer(self.command, self.path)
                self.send_response(status)
                for key, value in {**headers, "Content-Length": str(len(body))}.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _any

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def sites() -> Iterator[Callable[[Callable[[str, str], Answer]], Site]]:
    made: list[Site] = []

    def make(answer: Callable[[str, str], Answer]) -> Site:
        made.append(Site(answer))
        return made[-1]

    yield make
    for site in made:
        site.close()


def _json(value: object, status: int = 200) -> Answer:
    return status, {"Content-Type": "application/json"}, json.dumps(value).encode()


async def _signed_in(name: str, url: str, scope: str) -> None:
    record = OAuthRecord(server_url=url, redirect_uri="http://127.0.0.1:1/callback")
    await TokenFile(token_path(name), record).set_tokens(
        OAuthToken(access_token="granted", scope=scope, expires_in=3600)
    )


async def test_a_pod_hands_back_a_step_up_and_keeps_the_wider_scope_for_the_next_login(
    sites: Callable[[Callable[[str, str], Answer]], Site],
) -> None:
    def answer(method: str, path: str) -> Answer:
        challenge = 'Bearer error="insufficient_scope", scope="files:write"'
        return 403, {"WWW-Authenticate": challenge}, b'{"error":"insufficient_scope"}'

    site = sites(answer)
    url = f"{site.url}/mcp"
    await _signed_in("tracker", url, "files:read")
    auth = stored_auth("tracker", McpServerConfig(url=url))
    assert auth is not None
    async with httpx2.AsyncClient(auth=auth) as http:
        response = await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/call"})
    # Handed back as the server sent it: no discovery, no registration, no browser.
    assert response.status_code == 403
    assert [(m, p) for m, p, _ in site.seen] == [("POST", "/mcp")]
    assert site.seen[0][2] == "Bearer granted"
    kept = TokenFile.read(token_path("tracker"), url)
    assert kept is not None and kept.wanted_scope() == "files:read files:write"


async def test_a_pod_hands_back_a_401_without_trying_to_sign_in(
    sites: Callable[[Callable[[str, str], Answer]], Site],
) -> None:
    site = sites(lambda method, path: (401, {"WWW-Authenticate": "Bearer"}, b""))
    url = f"{site.url}/mcp"
    await _signed_in("tracker", url, "")
    auth = stored_auth("tracker", McpServerConfig(url=url))
    async with httpx2.AsyncClient(auth=auth) as http:
        response = await http.post(url, json={})
    assert response.status_code == 401
    assert len(site.seen) == 1


def _legacy_server(
    sites: Callable[[Callable[[str, str], Answer]], Site], metadata: Callable[[str], dict[str, str]]
) -> Site:
    """A 2025-03-26 server: 401 on /mcp, no protected-resource metadata, its authorization
    metadata at its own root (``metadata(its origin)``)."""
    holder: list[Site] = []

    def answer(method: str, path: str) -> Answer:
        if path == "/.well-known/oauth-authorization-server":
            return _json(metadata(holder[0].url))
        if path.startswith("/.well-known/"):
            return _json({"error": "not found"}, 404)
        if path == "/register":
            return _json({"client_id": "c1", "redirect_uris": ["http://127.0.0.1/callback"]}, 201)
        return 401, {"WWW-Authenticate": "Bearer"}, b""

    holder.append(sites(answer))
    return holder[0]


async def test_a_2025_03_26_server_cannot_send_the_code_to_another_origin(
    sites: Callable[[Callable[[str, str], Answer]], Site],
) -> None:
    elsewhere = sites(
        lambda method, path: _json({"access_token": "stolen", "token_type": "Bearer"})
    )

    def metadata(home: str) -> dict[str, str]:
        return {
            "issuer": f"{home}/oauth",
            "authorization_endpoint": f"{home}/oauth/authorize",
            "token_endpoint": f"{elsewhere.url}/token",
            "registration_endpoint": f"{home}/register",
        }

    server = _legacy_server(sites, metadata)
    opened: list[str] = []

    async def open_url(url: str) -> None:
        opened.append(url)

    with pytest.raises(BaseException) as caught:  # the SDK's task group wraps it
        await login("legacy", McpServerConfig(url=f"{server.url}/mcp"), open_url)
    assert re.search(
        r"names token_endpoint http://\S+/token, on another origin", describe(caught.value)
    )
    assert opened == [] and elsewhere.seen == []
    assert not any(path == "/register" for _, path, _ in server.seen)


async def test_a_2025_03_26_issuer_under_the_servers_own_origin_is_taken_as_the_origin(
    sites: Callable[[Callable[[str, str], Answer]], Site],
) -> None:
    def metadata(home: str) -> dict[str, str]:
        return {
            "issuer": f"{home}/oauth",
            "authorization_endpoint": f"{home}/oauth/authorize",
            "token_endpoint": f"{home}/oauth/token",
            "registration_endpoint": f"{home}/register",
        }

    server = _legacy_server(sites, metadata)
    opened: list[str] = []

    async def open_url(url: str) -> None:
        opened.append(url)
        raise OAuthFlowError("no browser in this test")

    # Past the issuer check (the SDK alone stops at "issuer mismatch"): registered, and the
    # browser is sent to the server's own authorization endpoint.
    with pytest.raises(BaseException) as caught:
        await login("legacy", McpServerConfig(url=f"{server.url}/mcp"), open_url)
    assert describe(caught.value) == "no browser in this test"
    assert len(opened) == 1 and opened[0].startswith(f"{server.url}/oauth/authorize?")


def test_a_failed_login_is_one_line_without_a_traceback(
    sites: Callable[[Callable[[str, str], Answer]], Site], tmp_path: Path
) -> None:
    # The issuer carries terminal escapes: the line that names it must not.
    issuer = "https://evil.example/\x1b]0;pwned\x07\x1b[2J"
    server = _legacy_server(sites, lambda home: {"issuer": issuer, "token_endpoint": f"{home}/t"})
    config = tmp_path / "config"
    (config / "pod").mkdir(parents=True, exist_ok=True)
    (config / "pod" / "config.toml").write_text(f'[mcp.servers.legacy]\nurl = "{server.url}/mcp"\n')
    workspace = tmp_path / "ws"
    workspace.mkdir()
    env = {**os.environ, "XDG_CONFIG_HOME": str(config), "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "cli", "mcp", "login", "legacy", "--workspace", str(workspace)],
        env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode != 0
    assert "Traceback" not in done.stderr and "OAuth flow error" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert "could not sign in to MCP server legacy" in lines[0]
    assert "issuer https://evil.example/" in lines[0] and "on another origin" in lines[0]
    assert "\x1b" not in done.stderr and "\x07" not in done.stderr


def test_the_login_help_keeps_its_brackets() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "200"}
    done = subprocess.run(
        [sys.executable, "-m", "cli", "mcp", "login", "--help"],
        env=env, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    assert "as named in [mcp.servers]" in done.stdout


def test_the_client_credentials_secret_comes_from_the_environment_only() -> None:
    url = "https://mcp.example.com/mcp"
    with pytest.raises(ValidationError, match="must name an environment variable"):
        McpServerConfig(
            url=url, oauth_grant="client_credentials", oauth_client_id="me",
            oauth_client_secret="hunter2",
        )  # fmt: skip
    with pytest.raises(ValidationError, match="needs oauth_client_id and oauth_client_secret"):
        McpServerConfig(url=url, oauth_grant="client_credentials", oauth_client_id="me")
    with pytest.raises(ValidationError, match="https URL with a path"):
        McpServerConfig(url=url, oauth_client_metadata_url="http://me.example/client.json")
    with pytest.raises(ValidationError, match="https URL with a path"):
        McpServerConfig(url=url, oauth_client_metadata_url="https://me.example/")


async def test_client_credentials_get_their_own_token_with_the_secret_of_the_environment(
    sites: Callable[[Callable[[str, str], Answer]], Site], monkeypatch: pytest.MonkeyPatch
) -> None:
    holder: list[Site] = []

    def answer(method: str, path: str) -> Answer:
        home = holder[0].url
        if path == "/.well-known/oauth-protected-resource/mcp":
            return _json({"resource": f"{home}/mcp", "authorization_servers": [home]})
        if path == "/.well-known/oauth-authorization-server":
            return _json(
                {"issuer": home, "authorization_endpoint": f"{home}/authorize",
                 "token_endpoint": f"{home}/token", "response_types_supported": ["code"]}
            )  # fmt: skip
        if path == "/token":
            return _json({"access_token": "machine", "token_type": "Bearer", "expires_in": 60})
        if path.startswith("/.well-known/"):
            return _json({}, 404)
        authorized = holder[0].seen[-1][2] == "Bearer machine"
        return (200, {}, b"ok") if authorized else (401, {"WWW-Authenticate": "Bearer"}, b"")

    holder.append(sites(answer))
    url = f"{holder[0].url}/mcp"
    monkeypatch.setenv("MACHINE_SECRET", "s3cr3t")
    config = McpServerConfig(
        url=url, oauth_grant="client_credentials", oauth_client_id="robot",
        oauth_client_secret="${MACHINE_SECRET}",
    )  # fmt: skip
    auth = stored_auth("machine", config)
    async with httpx2.AsyncClient(auth=auth) as http:
        response = await http.post(url, json={})
    assert response.status_code == 200
    [token_request] = [seen for seen in holder[0].seen if seen[1] == "/token"]
    assert token_request[2].startswith("Basic ")  # client_secret_basic, from the environment
    # The secret is not kept in the token file (only the tokens are).
    assert "s3cr3t" not in token_path("machine").read_text()
    monkeypatch.delenv("MACHINE_SECRET")
    with pytest.raises(OAuthFlowError, match="MACHINE_SECRET, which is not set"):
        stored_auth("machine", config)


def test_a_step_up_met_in_a_pod_says_which_scope_and_how_to_grant_it() -> None:
    from orchestrator.adapters.mcp.failures import why_failed

    entry = McpServerConfig(url="https://mcp.example.com/mcp")
    said = why_failed(
        "tracker", entry, RuntimeError("an error response"), refusal=403, signed_in=True,
        wanted_scope="files:read files:write",
    )  # fmt: skip
    assert said == (
        "it answered 403 insufficient_scope: it wants the scope 'files:read files:write', more "
        "than the pod was granted; sign in again with `pod mcp login tracker`, which asks for it"
    )
    plain = why_failed("tracker", entry, RuntimeError("x"), refusal=403, signed_in=True)
    assert plain == "it answered 403 Forbidden: the credentials in its headers are not enough"


async def test_a_machine_server_whose_secret_is_not_set_says_so_before_it_is_tried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from orchestrator.adapters.mcp.servers import McpServers

    monkeypatch.delenv("UNSET_SECRET", raising=False)
    alerts: list[tuple[str, str]] = []
    entry = McpServerConfig(
        url="http://127.0.0.1:9/mcp", oauth_grant="client_credentials",
        oauth_client_id="robot", oauth_client_secret="${UNSET_SECRET}",
    )  # fmt: skip
    servers = McpServers.from_config(
        {"m": entry}, tmp_path, lambda level, message: alerts.append((level, message))
    )
    await servers.start()
    await servers.close()
    assert alerts == [
        (
            "error",
            "MCP server m failed: its oauth_client_secret names the environment variable "
            "UNSET_SECRET, which is not set where the pod started; set it there",
        )
    ]


def test_the_client_metadata_document_names_the_url_and_the_loopback(tmp_path: Path) -> None:
    config = tmp_path / "config"
    (config / "pod").mkdir(parents=True, exist_ok=True)
    url = "https://me.example.com/pod-client.json"
    (config / "pod" / "config.toml").write_text(
        f'[mcp.servers.tracker]\nurl = "https://mcp.example.com/mcp"\n'
        f'oauth_client_metadata_url = "{url}"\n'
    )
    workspace = tmp_path / "ws"
    workspace.mkdir()
    env = {**os.environ, "XDG_CONFIG_HOME": str(config), "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "cli", "mcp", "client-metadata"]
    done = subprocess.run(
        [*command, "tracker", "--workspace", str(workspace)],
        env=env, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    document = json.loads(done.stdout)
    assert document["client_id"] == url
    assert document["redirect_uris"] == ["http://127.0.0.1/callback"]
    assert document["token_endpoint_auth_method"] == "none"
    assert "authorization_code" in document["grant_types"]
    missing = subprocess.run(
        [*command, "other", "--workspace", str(workspace)],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert missing.returncode == 1 and "has no oauth_client_metadata_url" in missing.stderr
