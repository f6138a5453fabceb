"""OAuth for HTTP MCP servers: ``pod mcp login NAME`` signs in once; pods then use the tokens.

The flow is the ``mcp`` SDK's ``OAuthClientProvider``: the server's protected-resource and
authorization-server metadata are discovered, the pod registers itself as a client
(dynamic client registration; or it uses the client the entry's ``oauth_client_id`` and
``oauth_client_secret`` name), and the person authorizes it in a browser (authorization code
with PKCE). The browser comes back to a loopback address the login listens on
(``http://127.0.0.1:<port>/callback``), which hands the code to the SDK for the tokens.

Where the authorization server takes URL-based client IDs, the entry's
``oauth_client_metadata_url`` names the pod instead of a registration (:func:`client_metadata_document`
is what to host there). A scope a server asked for in a pod (a step-up, kept as
``wanted_scope``) is asked for by the next login. With ``oauth_grant = "client_credentials"``
no person signs in: the pod asks the token endpoint itself, the secret from the environment.
What the pod adds to the SDK's flow is :mod:`.oauth_flow`.

Tokens (and the client registration they belong to) are kept in
``<state dir>/mcp-oauth/<server>.json``, mode 0600 in a 0700 directory, never in a session or
a log. A pod serving the workspace reads them for that server (the SDK refreshes them when they
expire and writes the new ones back); when they are missing or no longer accepted, the server
fails to start with an alert naming ``pod mcp login NAME``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import warnings
from collections.abc import Awaitable, Callable
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx2
from mcp import Client, types
from mcp.client.auth import OAuthFlowError
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from mcp.shared.exceptions import MCPDeprecationWarning
from pydantic import AnyUrl, BaseModel, ValidationError

from orchestrator.adapters.mcp.client_side import CLIENT_NAME, client_version
from orchestrator.adapters.mcp.oauth_flow import (
    PodClientCredentials,
    PodOAuth,
    quiet_sdk_tracebacks,
)
from orchestrator.config.mcp import McpServerConfig, expand, referenced_variables
from orchestrator.config.paths import safe_pod_name, state_dir

LOGIN_TIMEOUT_S = 300.0
"""How long ``pod mcp login`` waits for the browser to come back."""


class OAuthRecord(BaseModel):
    """What one server's token file holds."""

    server_url: str
    """The URL the tokens were issued for: a server whose URL changed signs in again."""
    redirect_uri: str
    """The loopback address the client was registered with."""
    tokens: OAuthToken | None = None
    client_info: OAuthClientInformationFull | None = None
    wanted_scope: str | None = None
    """The scope the server asked for beyond the last grant (a 403 ``insufficient_scope`` met
    in a pod); the next ``pod mcp login`` asks for it."""


def token_path(server: str) -> Path:
    """Where the tokens of the server named ``server`` are kept."""
    return state_dir() / "mcp-oauth" / f"{safe_pod_name(server)}.json"


class TokenFile:
    """The SDK's ``TokenStorage`` over one server's token file (0600, written whole)."""

    def __init__(self, path: Path, record: OAuthRecord) -> None:
        self.path = path
        self.record = record

    @classmethod
    def read(cls, path: Path, server_url: str) -> TokenFile | None:
        """The file's record, or None when there is none for this URL (or it is unreadable)."""
        try:
            record = OAuthRecord.model_validate_json(path.read_bytes())
        except (OSError, ValidationError):
            return None
        return cls(path, record) if record.server_url == server_url else None

    async def get_tokens(self) -> OAuthToken | None:
        """The tokens, if the pod has signed in."""
        return self.record.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        """Keep new tokens (a login, or a refresh)."""
        self.record = self.record.model_copy(update={"tokens": tokens})
        self._write()

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        """The pod's registration with the authorization server."""
        return self.record.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        """Keep the registration."""
        self.record = self.record.model_copy(update={"client_info": client_info})
        self._write()

    def want_scope(self, scope: str) -> None:
        """Keep the scope a server asked for, for the next sign-in."""
        if scope and scope != self.record.wanted_scope:
            self.record = self.record.model_copy(update={"wanted_scope": scope})
            self._write()

    def wanted_scope(self) -> str | None:
        """The scope a server asked for beyond the last grant, if any."""
        return self.record.wanted_scope

    def _write(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(self.path.parent, 0o700)
        temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}")
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
        # Created 0600 and never through a link; replaced whole, so a reader sees one version.
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(self.record.model_dump_json(exclude_none=True).encode())
        os.replace(temporary, self.path)


def _metadata(redirect_uri: str) -> OAuthClientMetadata:
    return OAuthClientMetadata(
        client_name=CLIENT_NAME,
        software_version=client_version(),
        redirect_uris=[AnyUrl(redirect_uri)],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
    )


LOOPBACK_REDIRECT = "http://127.0.0.1/callback"
"""The redirect a client ID metadata document names: the login's loopback, whose port changes
at each login (RFC 8252 §7.3 lets an authorization server accept any port for it)."""


def client_metadata_document(url: str) -> dict[str, object]:
    """The client ID metadata document to host at ``url`` (a URL-based client ID)."""
    metadata = _metadata(LOOPBACK_REDIRECT).model_dump(mode="json", exclude_none=True)
    return {"client_id": url, **metadata, "token_endpoint_auth_method": "none"}


def _registered(config: McpServerConfig, redirect_uri: str) -> OAuthClientInformationFull | None:
    """The client registered beforehand (``oauth_client_id``), or None to register one."""
    if not config.oauth_client_id:
        return None
    secret = expand(config.oauth_client_secret) if config.oauth_client_secret else None
    return OAuthClientInformationFull(
        client_id=expand(config.oauth_client_id),
        client_secret=secret or None,
        redirect_uris=[AnyUrl(redirect_uri)],
        token_endpoint_auth_method="client_secret_basic" if secret else "none",
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
    )


def stored_auth(server: str, config: McpServerConfig) -> httpx2.Auth | None:
    """The OAuth of an HTTP server the user signed in to (``pod mcp login``), or None. It adds
    the access token to each request and refreshes it; it cannot sign in again by itself (a
    refusal is handed back, see :mod:`.oauth_flow`). With ``oauth_grant =
    "client_credentials"`` the pod gets its tokens itself."""
    if config.url is None:
        return None
    quiet_sdk_tracebacks()
    path = token_path(server)
    if config.oauth_grant == "client_credentials":
        storage = TokenFile.read(path, config.url) or TokenFile(
            path, OAuthRecord(server_url=config.url, redirect_uri="")
        )
        return client_credentials(config, storage)
    stored = TokenFile.read(path, config.url)
    if stored is None or stored.record.tokens is None:
        return None
    return PodOAuth(
        server_url=config.url,
        client_metadata=_metadata(stored.record.redirect_uri),
        storage=stored,
        keeper=stored,
    )


def client_credentials(config: McpServerConfig, storage: TokenFile) -> PodClientCredentials:
    """The client-credentials grant of ``config`` (its secret from the environment)."""
    assert config.url is not None and config.oauth_client_id and config.oauth_client_secret
    secret = expand(config.oauth_client_secret)
    if not secret:
        names = ", ".join(referenced_variables(config.oauth_client_secret))
        raise OAuthFlowError(
            f"oauth_client_secret names the environment variable {names}, which is not set"
        )
    with warnings.catch_warnings():
        # Without oauth_issuer the SDK warns that the server picks the authorization server;
        # docs/mcp.md says so, and how to pin it.
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        return PodClientCredentials(
            server_url=config.url,
            storage=storage,
            client_id=expand(config.oauth_client_id),
            client_secret=secret,
            issuer=config.oauth_issuer,
        )


class Loopback:
    """The address the browser comes back to with the authorization code."""

    def __init__(self) -> None:
        self._server: asyncio.Server | None = None
        self._result: asyncio.Future[AuthorizationCodeResult] | None = None
        self.port = 0

    @property
    def redirect_uri(self) -> str:
        """``http://127.0.0.1:<port>/callback``."""
        return f"http://127.0.0.1:{self.port}/callback"

    async def start(self) -> None:
        """Listen on a free port of 127.0.0.1."""
        self._result = asyncio.get_running_loop().create_future()
        self._server = await asyncio.start_server(self._answer, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def result(self) -> AuthorizationCodeResult:
        """The code and state the browser brought back (raises OAuthFlowError on a refusal)."""
        assert self._result is not None
        return await asyncio.wait_for(asyncio.shield(self._result), LOGIN_TIMEOUT_S)

    async def close(self) -> None:
        """Stop listening."""
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await asyncio.wait_for(reader.readline(), 10)
            parts = line.decode("latin-1").split()
            target = urlsplit(parts[1]) if len(parts) >= 2 else None
            if target is None or target.path != "/callback":
                writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                return
            query = {key: values[0] for key, values in parse_qs(target.query).items()}
            if "code" in query:
                outcome = AuthorizationCodeResult(
                    code=query["code"], state=query.get("state"), iss=query.get("iss")
                )
                body = b"Signed in: you can close this page and go back to the terminal.\n"
            else:
                why = query.get("error_description") or query.get("error") or "no code came back"
                body = f"Not signed in: {why}\n".encode()
            if self._result is not None and not self._result.done():
                if "code" in query:
                    self._result.set_result(outcome)
                else:
                    self._result.set_exception(OAuthFlowError(f"the authorization failed: {why}"))
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\n"
                + f"Content-Length: {len(body)}\r\n\r\n".encode()
                + body
            )
        except (TimeoutError, ConnectionError, UnicodeError):
            pass
        finally:
            with contextlib.suppress(ConnectionError):
                await writer.drain()
            writer.close()


async def login(
    server: str, config: McpServerConfig, open_url: Callable[[str], Awaitable[None]]
) -> Path:
    """Sign in to the HTTP server ``server`` (a new registration, or the URL-based client ID,
    then the browser; with the client-credentials grant, the token endpoint alone); the tokens
    are kept in its token file, whose path is returned. Raises the SDK's OAuth errors (which
    are not logged with a traceback: the caller says what went wrong, in one line)."""
    if config.url is None:
        raise ValueError(f"MCP server {server} is a stdio server; only HTTP servers sign in")
    sdk_log = logging.getLogger("mcp.client.auth")
    level = sdk_log.level
    sdk_log.setLevel(logging.CRITICAL)
    try:
        return await _login(server, config, config.url, open_url)
    finally:
        sdk_log.setLevel(level)


async def _login(
    server: str, config: McpServerConfig, url: str, open_url: Callable[[str], Awaitable[None]]
) -> Path:
    path = token_path(server)
    before = TokenFile.read(path, url)
    # A scope the server asked for in a pod (a step-up) is asked for again by this login.
    wanted = before.record.wanted_scope if before is not None else None
    loopback = Loopback()
    await loopback.start()
    try:
        # A registration belongs to its redirect address, which is new at each login; a
        # client registered beforehand is used as it is.
        storage = TokenFile(
            path,
            OAuthRecord(
                server_url=url,
                redirect_uri=loopback.redirect_uri,
                client_info=_registered(config, loopback.redirect_uri),
                wanted_scope=wanted,
            ),
        )
        auth: httpx2.Auth
        if config.oauth_grant == "client_credentials":
            auth = client_credentials(config, storage)
        else:
            auth = PodOAuth(
                server_url=url,
                client_metadata=_metadata(loopback.redirect_uri),
                storage=storage,
                keeper=storage,
                redirect_handler=open_url,
                callback_handler=loopback.result,
                client_metadata_url=config.oauth_client_metadata_url,
            )
        http = create_mcp_http_client(headers=config.resolved_headers() or None, auth=auth)
        transport = streamable_http_client(url, http_client=http)
        identity = types.Implementation(name=CLIENT_NAME, version=client_version())
        async with Client(transport, client_info=identity) as client:
            await client.list_tools()
        if storage.record.tokens is None:
            # The server let the pod in without signing in: nothing to keep.
            raise OAuthFlowError(f"MCP server {server} did not ask the pod to sign in")
        if storage.record.wanted_scope is not None:
            storage.record = storage.record.model_copy(update={"wanted_scope": None})
            storage._write()
        return storage.path
    finally:
        await loopback.close()
