"""The pod's OAuth providers: the ``mcp`` SDK's, with what a pod adds around their flow.

- **Nobody to sign in, in a pod.** A pod's provider has no browser: a 401 it cannot cure by
  refreshing, or a 403 ``insufficient_scope`` (a tool wants a wider scope than was granted), is
  handed back as the server sent it, and the pod's failure message says how to sign in
  (``pod mcp login NAME``). For a step-up the scope the server asked for is kept beside the
  tokens (``wanted_scope``), so that the next login asks for it with the scope already granted.
- **The 2025-03-26 metadata fallback.** A server of that protocol publishes no protected-resource
  metadata; its authorization server is its own origin, whose
  ``/.well-known/oauth-authorization-server`` the SDK reads. Some such servers name an issuer
  under that origin with a path (``https://host/oauth``), which the SDK refuses (RFC 8414 §3.3
  wants the issuer the well-known URL was built from: the origin). On that path only, an
  issuer on the server's own origin is taken as naming the origin: it has no more authority than
  the origin the pod already trusts. An issuer, or a token, authorization or registration
  endpoint, on any other origin is refused, so a server cannot send the code, the PKCE verifier
  or a client secret elsewhere.
- **Machine use.** ``oauth_grant = "client_credentials"`` uses the SDK's client-credentials
  provider: the pod gets (and renews) its tokens itself.

The SDK logs every failed flow with its traceback; these failures are reported as one line by
whoever called, so the log keeps the line and drops the traceback.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any, Protocol
from urllib.parse import urlsplit

import httpx2
from mcp.client.auth import OAuthClientProvider, OAuthFlowError
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.auth.utils import (
    extract_field_from_www_auth,
    extract_scope_from_www_auth,
    union_scopes,
)
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

__all__ = ["PodClientCredentials", "PodOAuth", "ScopeKeeper", "quiet_sdk_tracebacks"]

LEGACY_METADATA_PATH = "/.well-known/oauth-authorization-server"
"""Where a 2025-03-26 server's authorization metadata is, under its origin."""
_ENDPOINTS = ("authorization_endpoint", "token_endpoint", "registration_endpoint")


class ScopeKeeper(Protocol):
    """Where a step-up's wanted scope is kept (the server's token file)."""

    def want_scope(self, scope: str) -> None:
        """Keep ``scope`` for the next sign-in."""

    def wanted_scope(self) -> str | None:
        """The scope a server asked for beyond the last grant, if any."""


def origin(url: str) -> str:
    """``scheme://host[:port]`` of ``url``."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _step_up(response: httpx2.Response) -> bool:
    return (
        response.status_code == 403
        and extract_field_from_www_auth(response, "error") == "insufficient_scope"
    )


class _OneLine(logging.Filter):
    """Keeps the SDK's "OAuth flow error" line and drops its traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.exc_info = None
        record.exc_text = None
        return True


def quiet_sdk_tracebacks() -> None:
    """Make the SDK's OAuth log its failures without a traceback (idempotent)."""
    logger = logging.getLogger("mcp.client.auth.oauth2")
    if not any(isinstance(f, _OneLine) for f in logger.filters):
        logger.addFilter(_OneLine())


class _Guarded:
    """What both providers add to the SDK's flow (see the module's docstring)."""

    context: Any
    _alias: tuple[str, str] | None = None
    """(the issuer a 2025-03-26 server's metadata named, the origin it stands for)."""

    def _guard(
        self,
        inner: AsyncGenerator[httpx2.Request, httpx2.Response],
        request: httpx2.Request,
        interactive: bool,
        keeper: ScopeKeeper | None,
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        async def flow() -> AsyncGenerator[httpx2.Request, httpx2.Response]:
            try:
                outgoing = await inner.__anext__()
                while True:
                    response = yield outgoing
                    if outgoing is request and not interactive:
                        if _step_up(response) and keeper is not None:
                            granted = self.context.current_tokens
                            keeper.want_scope(
                                union_scopes(
                                    granted.scope if granted is not None else None,
                                    extract_scope_from_www_auth(response),
                                )
                                or ""
                            )
                        if response.status_code == 401 or _step_up(response):
                            return  # handed back: the pod's message says how to sign in
                    if self.context.auth_server_url is None and self._legacy(outgoing):
                        response = await self._renamed(outgoing, response)
                    outgoing = await inner.asend(response)
            except StopAsyncIteration:
                return
            finally:
                await inner.aclose()

        return flow()

    def _legacy(self, outgoing: httpx2.Request) -> bool:
        server: str = self.context.server_url
        return str(outgoing.url) == origin(server) + LEGACY_METADATA_PATH

    async def _renamed(
        self, outgoing: httpx2.Request, response: httpx2.Response
    ) -> httpx2.Response:
        """A 2025-03-26 server's metadata, its same-origin issuer renamed to the origin; raises
        OAuthFlowError when it names another origin for its issuer or endpoints."""
        if response.status_code != 200:
            return response
        try:
            document = json.loads(await response.aread())
        except ValueError:
            return response
        if not isinstance(document, dict):
            return response
        home = origin(self.context.server_url)
        for key in ("issuer", *_ENDPOINTS):
            value = document.get(key)
            if isinstance(value, str) and origin(value) != home:
                raise OAuthFlowError(
                    f"the server's authorization metadata (2025-03-26, at its own origin) names "
                    f"{key} {value}, on another origin than {home}: refused"
                )
        issuer = document.get("issuer")
        if not isinstance(issuer, str) or issuer.rstrip("/") == home:
            return response
        self._alias = (issuer, home)
        document["issuer"] = home
        headers = {
            k: v
            for k, v in response.headers.items()
            if k.lower() not in ("content-length", "content-encoding", "transfer-encoding")
        }
        return httpx2.Response(
            200, headers=headers, content=json.dumps(document).encode(), request=outgoing
        )

    def _unaliased(self, result: AuthorizationCodeResult) -> AuthorizationCodeResult:
        """The authorization response's ``iss`` (RFC 9207) as the renamed metadata names it."""
        if self._alias is not None and result.iss == self._alias[0]:
            issuer = self.context.oauth_metadata.issuer if self.context.oauth_metadata else None
            return result.model_copy(update={"iss": str(issuer) if issuer else self._alias[1]})
        return result


class PodOAuth(_Guarded, OAuthClientProvider):
    """Authorization code with PKCE: interactive in ``pod mcp login`` (``redirect_handler``
    given), handing refusals back in a pod (none given)."""

    def __init__(
        self,
        *,
        server_url: str,
        client_metadata: OAuthClientMetadata,
        storage: Any,
        keeper: ScopeKeeper | None = None,
        redirect_handler: Callable[[str], Awaitable[None]] | None = None,
        callback_handler: Callable[[], Awaitable[AuthorizationCodeResult]] | None = None,
        client_metadata_url: str | None = None,
    ) -> None:
        async def callback() -> AuthorizationCodeResult:
            assert callback_handler is not None
            return self._unaliased(await callback_handler())

        super().__init__(
            server_url=server_url,
            client_metadata=client_metadata,
            storage=storage,
            redirect_handler=redirect_handler,
            callback_handler=callback if callback_handler is not None else None,
            client_metadata_url=client_metadata_url,
        )
        self.interactive = redirect_handler is not None
        self.keeper = keeper

    async def _perform_authorization_code_grant(self) -> tuple[str, str]:
        # A scope a server asked for beyond the last grant (a step-up met in a pod) is asked
        # for now, with what the server's challenge names.
        wanted = self.keeper.wanted_scope() if self.keeper is not None else None
        if wanted:
            scope = self.context.client_metadata.scope
            self.context.client_metadata.scope = union_scopes(scope, wanted)
        return await super()._perform_authorization_code_grant()

    def _auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        return self._guard(super()._auth_flow(request), request, self.interactive, self.keeper)


class PodClientCredentials(_Guarded, ClientCredentialsOAuthProvider):
    """The client-credentials grant (machine use): the pod gets its tokens itself, so a 401 or
    a step-up is answered by asking the token endpoint again."""

    def _auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        return self._guard(super()._auth_flow(request), request, True, None)
