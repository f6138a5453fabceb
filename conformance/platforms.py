"""Amazon Bedrock's and Google Vertex AI's Claude endpoints, faked in front of the fake API.

:class:`PlatformFake` listens on 127.0.0.1 and speaks one platform's protocol to the
client; behind it, each request goes on in the Anthropic form to a :class:`~conformance.
server.FakeAnthropic`, which validates it, answers from its script and records it (so
``api.requests`` holds every request, with its model, as the Messages API would have got it).

Bedrock (``platform="bedrock"``), as its runtime API documents it:

* ``POST /model/{modelId}/invoke`` and ``/model/{modelId}/invoke-with-response-stream``; the
  body is the Messages request without ``model`` and ``stream``, with ``anthropic_version:
  "bedrock-2023-05-31"`` (or a dated API version: SDK 2.x sends its own);
* every request signed with AWS Signature Version 4 for the ``bedrock`` service in the
  fake's region, by the fake's access key: the signature is checked (botocore computes the
  expected one), so a client that signed with other credentials is refused
  (``403 UnrecognizedClientException`` / ``InvalidSignatureException``);
* a stream in the ``application/vnd.amazon.eventstream`` framing: one ``chunk`` event per
  Messages SSE event, its JSON base64-encoded under ``bytes``; an error inside the stream is
  an ``exception`` frame (``:exception-type: serviceUnavailableException`` …);
* errors as ``{"message": …}`` with the exception's name in ``x-amzn-ErrorType``: a 529
  becomes ``503 ServiceUnavailableException``, a 429 ``ThrottlingException``, a 500
  ``InternalServerException``, a 404 ``ResourceNotFoundException``, a 400
  ``ValidationException`` with the API's message.

Vertex AI (``platform="vertex"``):

* ``POST /v1/projects/{project}/locations/{region}/publishers/anthropic/models/{model}:
  rawPredict`` (``:streamRawPredict`` to stream); the body has no ``model``, has
  ``anthropic_version: "vertex-2023-10-16"`` (or a dated API version), and ``stream`` as
  the specifier says;
* a Google OAuth access token (``Authorization: Bearer``): the one :attr:`PlatformFake.
  token_url` hands out for the fake's refresh token (the ``token_uri`` of an
  application-default credentials file that points here, :meth:`PlatformFake.adc_file`);
* the Messages SSE stream as it is; the Anthropic API's errors passed through (a 529 stays
  ``overloaded_error``), and Google's own shape (``{"error": {"code", "message",
  "status"}}``) for what Vertex's front end answers itself: ``RESOURCE_EXHAUSTED`` for 429,
  ``NOT_FOUND`` for a model the project cannot use, ``UNAUTHENTICATED`` for a bad token.
"""

from __future__ import annotations

import base64
import http.client
import json
import threading
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal

from conformance.platform_wire import (
    BEDROCK_ERRORS,
    BEDROCK_VERSION,
    GOOGLE_STATUSES,
    STREAM_EXCEPTIONS,
    VERTEX_VERSION,
    event_frame,
    jwt_signed_by,
    new_key,
    service_account_info,
    sigv4_refusal,
    version_ok,
)
from conformance.server import FakeAnthropic
from conformance.validation import Rejected

__all__ = ["PlatformFake", "PlatformRequest", "event_frame"]

PlatformName = Literal["bedrock", "vertex"]


@dataclass
class PlatformRequest:
    """One request as the platform received it, and what the fake made of it."""

    path: str
    headers: dict[str, str]
    status: int = 0
    refused: str | None = None
    """Why the platform itself refused it (auth, path, version), before the Messages API."""


@dataclass
class PlatformFake:
    """One platform's endpoint on 127.0.0.1 in front of ``api`` (see the module)."""

    platform: PlatformName
    api: FakeAnthropic
    region: str = "us-east-1"
    access_key: str = "AKIDFAKEPODTEST00001"
    secret_key: str = "fake-secret-key-for-pod-tests"
    project_id: str = "pod-test-project"
    client_email: str = "pod-test@pod-test-project.iam.gserviceaccount.com"
    access_token: str = "ya29.fake-access-token"
    requests: list[PlatformRequest] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None
    _key: Any = None

    def start(self) -> PlatformFake:
        """Serve in a background thread (the fake API too); returns ``self``."""
        self.api.start()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                fake._handle(self)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        """Stop serving (and the fake API)."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        self.api.stop()

    def __enter__(self) -> PlatformFake:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        """What the platform's SDK client takes as ``base_url``."""
        assert self._server is not None, "not started"
        root = f"http://127.0.0.1:{self._server.server_address[1]}"
        return root + ("/v1" if self.platform == "vertex" else "")

    @property
    def token_url(self) -> str:
        """Vertex: the OAuth token endpoint the fake's credentials file names."""
        assert self._server is not None, "not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}/token"

    def adc_file(self, folder: Path) -> Path:
        """Vertex: an application-default credentials file (a service account's key, made
        for this fake) whose ``token_uri`` is this fake; point ``GOOGLE_APPLICATION_
        CREDENTIALS`` at it. The token endpoint checks the signed JWT with the key's public
        half, as Google's does."""
        if self._key is None:
            self._key = new_key()
        path = folder / "adc.json"
        info = service_account_info(self._key, self.client_email, self.project_id, self.token_url)
        path.write_text(json.dumps(info))
        return path

    # -- one request --------------------------------------------------------------------------

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("content-length") or 0)
        raw = handler.rfile.read(length)
        headers = {k.lower(): v for k, v in handler.headers.items()}
        record = PlatformRequest(path=handler.path, headers=headers)
        self.requests.append(record)
        if self.platform == "vertex" and handler.path.split("?")[0] == "/token":
            self._token(handler, record, raw)
            return
        try:
            body = json.loads(raw)
            if self.platform == "bedrock":
                model, stream = self._bedrock_request(handler, record, raw, body)
            else:
                model, stream = self._vertex_request(record, body)
        except Rejected as refused:
            record.refused = refused.message
            self._error(handler, record, refused.status, refused.error_type, refused.message)
            return
        except ValueError:
            self._error(handler, record, 400, "ValidationException", "the body is not JSON")
            return
        body.pop("anthropic_version", None)
        forward = {"model": model, **body, **({"stream": True} if stream else {})}
        self._forward(handler, record, forward, stream)

    def _bedrock_request(
        self, handler: BaseHTTPRequestHandler, record: PlatformRequest, raw: bytes, body: Any
    ) -> tuple[str, bool]:
        parts = handler.path.split("?")[0].split("/")
        if (
            len(parts) != 4
            or parts[1] != "model"
            or parts[3]
            not in (
                "invoke",
                "invoke-with-response-stream",
            )
        ):
            raise Rejected(404, "UnknownOperationException", f"no operation at {handler.path}")
        self._check_signature(handler, record, raw)
        if not isinstance(body, dict) or not version_ok(body, BEDROCK_VERSION):
            raise Rejected(
                400, "ValidationException", "anthropic_version: must be " + BEDROCK_VERSION
            )
        for key in ("model", "stream"):
            if key in body:
                raise Rejected(
                    400, "ValidationException", f"extraneous key [{key}] is not permitted"
                )
        return urllib.parse.unquote(parts[2]), parts[3] == "invoke-with-response-stream"

    def _check_signature(
        self, handler: BaseHTTPRequestHandler, record: PlatformRequest, raw: bytes
    ) -> None:
        why = sigv4_refusal(
            record.headers.get("authorization", ""),
            method="POST",
            url=f"http://{record.headers.get('host', '')}{handler.path}",
            headers=dict(handler.headers.items()),
            body=raw,
            keys=(self.access_key, self.secret_key),
            region=self.region,
        )
        if why is not None:
            raise Rejected(403, *why)

    def _vertex_request(self, record: PlatformRequest, body: Any) -> tuple[str, bool]:
        if record.headers.get("authorization") != f"Bearer {self.access_token}":
            raise Rejected(401, "UNAUTHENTICATED", "Request had invalid authentication "
                           "credentials. Expected OAuth 2 access token.")  # fmt: skip
        prefix = (
            f"/v1/projects/{self.project_id}/locations/{self.region}/publishers/anthropic/models/"
        )
        path = urllib.parse.unquote(record.path.split("?")[0])
        model, _, specifier = path.removeprefix(prefix).partition(":")
        if (
            not path.startswith(prefix)
            or "/" in model
            or specifier
            not in (
                "rawPredict",
                "streamRawPredict",
            )
        ):
            raise Rejected(404, "NOT_FOUND", f"The requested URL {path} was not found.")
        if not isinstance(body, dict) or not version_ok(body, VERTEX_VERSION):
            raise Rejected(400, "INVALID_ARGUMENT", "anthropic_version: must be " + VERTEX_VERSION)
        if "model" in body:
            raise Rejected(400, "INVALID_ARGUMENT", "model: Extra inputs are not permitted")
        stream = specifier == "streamRawPredict"
        if bool(body.get("stream")) != stream:
            raise Rejected(400, "INVALID_ARGUMENT", f"stream must be {str(stream).lower()} "
                           f"for :{specifier}")  # fmt: skip
        body.pop("stream", None)
        return model, stream

    def _token(self, handler: BaseHTTPRequestHandler, record: PlatformRequest, raw: bytes) -> None:
        form = urllib.parse.parse_qs(raw.decode())
        if not self._signed_by_key(form.get("assertion", [""])[0]):
            record.status, record.refused = 400, "the assertion is not signed by the key"
            self._send(
                handler,
                400,
                {"error": "invalid_grant", "error_description": "Invalid JWT Signature."},
            )
            return
        record.status = 200
        token = {"access_token": self.access_token, "expires_in": 3600, "token_type": "Bearer"}
        self._send(handler, 200, token)

    def _signed_by_key(self, assertion: str) -> bool:
        return self._key is not None and jwt_signed_by(assertion, self._key, self.client_email)

    # -- answers ------------------------------------------------------------------------------

    def _forward(
        self, handler: BaseHTTPRequestHandler, record: PlatformRequest, body: dict[str, Any],
        stream: bool,
    ) -> None:  # fmt: skip
        api = urllib.parse.urlsplit(self.api.base_url)
        connection = http.client.HTTPConnection(api.hostname or "127.0.0.1", api.port, timeout=60)
        try:
            connection.request("POST", "/v1/messages", json.dumps(body), {
                "x-api-key": "platform-fake", "content-type": "application/json",
                "anthropic-version": "2023-06-01",
            })  # fmt: skip
            response = connection.getresponse()
            if response.status != 200:
                answer = json.loads(response.read() or b"{}")
                error = answer.get("error", {})
                self._api_error(handler, record, response.status, answer, error.get("message", ""))
            elif not stream:
                record.status = 200
                self._send(handler, 200, json.loads(response.read()))
            elif self.platform == "vertex":
                self._relay_sse(handler, record, response)
            else:
                self._relay_event_stream(handler, record, response)
        finally:
            connection.close()

    def _relay_sse(
        self, handler: BaseHTTPRequestHandler, record: PlatformRequest, response: Any
    ) -> None:
        record.status = 200
        handler.send_response(200)
        handler.send_header("content-type", "text/event-stream")
        handler.send_header("connection", "close")
        handler.end_headers()
        while chunk := response.read1(65536):
            handler.wfile.write(chunk)
            handler.wfile.flush()
        handler.close_connection = True

    def _relay_event_stream(
        self, handler: BaseHTTPRequestHandler, record: PlatformRequest, response: Any
    ) -> None:
        record.status = 200
        handler.send_response(200)
        handler.send_header("content-type", "application/vnd.amazon.eventstream")
        handler.send_header("connection", "close")
        handler.end_headers()
        event = ""
        for line in response:
            text = line.decode().rstrip("\r\n")
            if text.startswith("event:"):
                event = text[len("event:") :].strip()
            elif text.startswith("data:"):
                data = text[len("data:") :].strip()
                handler.wfile.write(self._frame(event, data))
                handler.wfile.flush()
        handler.close_connection = True

    def _frame(self, event: str, data: str) -> bytes:
        if event == "error":
            error = json.loads(data).get("error", {})
            name = STREAM_EXCEPTIONS.get(error.get("type"), "modelStreamErrorException")
            headers = {":exception-type": name, ":content-type": "application/json",
                       ":message-type": "exception"}  # fmt: skip
            return event_frame(headers, json.dumps({"message": error.get("message", "")}).encode())
        payload = {"bytes": base64.b64encode(data.encode()).decode(), "p": "abcdefghij"}
        headers = {":event-type": "chunk", ":content-type": "application/json",
                   ":message-type": "event"}  # fmt: skip
        return event_frame(headers, json.dumps(payload).encode())

    def _api_error(
        self, handler: BaseHTTPRequestHandler, record: PlatformRequest, status: int,
        answer: dict[str, Any], message: str,
    ) -> None:  # fmt: skip
        if self.platform == "bedrock":
            code, name, said = BEDROCK_ERRORS.get(status, (500, "InternalServerException", None))
            self._error(handler, record, code, name, said or message)
        elif status in GOOGLE_STATUSES:
            if status == 404:
                model = record.path.rpartition("/")[2].partition(":")[0]
                message = (
                    f"Publisher Model `projects/{self.project_id}/locations/{self.region}/"
                    f"publishers/anthropic/models/{model}` not found."
                )
            self._error(handler, record, status, GOOGLE_STATUSES[status], message)
        else:  # the Anthropic API's own error, passed through as it is
            record.status = status
            self._send(handler, status, answer)

    def _error(
        self, handler: BaseHTTPRequestHandler, record: PlatformRequest, status: int, name: str,
        message: str,
    ) -> None:  # fmt: skip
        record.status = status
        if self.platform == "bedrock":
            kind = f"{name}:http://internal.amazon.com/coral/com.amazon.bedrock/"
            self._send(handler, status, {"message": message}, {"x-amzn-ErrorType": kind})
        else:
            error = {"code": status, "message": message, "status": name}
            self._send(handler, status, {"error": error})

    def _send(
        self, handler: BaseHTTPRequestHandler, status: int, body: Any,
        headers: dict[str, str] | None = None,
    ) -> None:  # fmt: skip
        data = json.dumps(body).encode()
        handler.send_response(status)
        handler.send_header("content-type", "application/json")
        handler.send_header("content-length", str(len(data)))
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(data)
