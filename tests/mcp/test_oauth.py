"""OAuth's parts of our own: the token file and the loopback the browser comes back to. The
whole sign-in runs against the conformance suite's authorization servers
(``tests/mcp/test_conformance_suite.py``, the ``auth/*`` scenarios)."""

from __future__ import annotations

import asyncio
import stat
import urllib.request
from pathlib import Path

import pytest
from mcp.client.auth import OAuthFlowError
from mcp.shared.auth import OAuthToken

from orchestrator.adapters.mcp.oauth import (
    Loopback,
    OAuthRecord,
    TokenFile,
    stored_auth,
    token_path,
)
from orchestrator.config.mcp import McpServerConfig


async def test_tokens_are_kept_0600_for_their_url_only(tmp_path: Path) -> None:
    path = token_path("tracker")
    assert path.parent.parent == tmp_path / "state" / "pod"  # the test's XDG_STATE_HOME
    record = OAuthRecord(
        server_url="https://mcp.example.com/mcp", redirect_uri="http://127.0.0.1:1/callback"
    )
    await TokenFile(path, record).set_tokens(OAuthToken(access_token="a1", refresh_token="r1"))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    again = TokenFile.read(path, "https://mcp.example.com/mcp")
    assert again is not None and await again.get_tokens() == OAuthToken(
        access_token="a1", refresh_token="r1"
    )
    # Another URL under the same name signs in afresh.
    assert TokenFile.read(path, "https://elsewhere.example.com/mcp") is None
    entry = McpServerConfig(url="https://mcp.example.com/mcp")
    assert stored_auth("tracker", entry) is not None
    assert stored_auth("other", entry) is None
    assert stored_auth("tracker", McpServerConfig(url="https://elsewhere.example.com/mcp")) is None


async def test_the_loopback_hands_over_the_code_or_the_refusal() -> None:
    async def visit(loopback: Loopback, query: str) -> str:
        def get() -> str:
            url = f"{loopback.redirect_uri}?{query}"
            with urllib.request.urlopen(url, timeout=10) as page:
                return str(page.read().decode())

        return await asyncio.to_thread(get)

    loopback = Loopback()
    await loopback.start()
    try:
        page = await visit(loopback, "code=c0de&state=s1")
        assert page.startswith("Signed in")
        result = await loopback.result()
        assert (result.code, result.state) == ("c0de", "s1")
    finally:
        await loopback.close()
    loopback = Loopback()
    await loopback.start()
    try:
        page = await visit(loopback, "error=access_denied&error_description=the+user+said+no")
        assert page == "Not signed in: the user said no\n"
        with pytest.raises(OAuthFlowError, match="the authorization failed: the user said no"):
            await loopback.result()
    finally:
        await loopback.close()


def test_a_client_registered_beforehand_keeps_its_secret_out_of_the_logs() -> None:
    from orchestrator.adapters.mcp.oauth import _registered
    from orchestrator.core.redaction import secret_values

    entry = McpServerConfig(
        url="https://mcp.example.com/mcp",
        oauth_client_id="pod-for-me",
        oauth_client_secret="${TRACKER_CLIENT_SECRET}",
    )
    environ = {"TRACKER_CLIENT_SECRET": "s3cret-value-1234"}
    assert "s3cret-value-1234" in secret_values(environ, {"tracker": entry})
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TRACKER_CLIENT_SECRET", "s3cret-value-1234")
        client = _registered(entry, "http://127.0.0.1:5/callback")
    assert client is not None
    assert (client.client_id, client.client_secret, client.token_endpoint_auth_method) == (
        "pod-for-me",
        "s3cret-value-1234",
        "client_secret_basic",
    )
    with pytest.raises(ValueError, match="oauth_client_id and oauth_client_secret are for an HTTP"):
        McpServerConfig(command="x", oauth_client_id="pod-for-me")
