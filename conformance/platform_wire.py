"""What the platform fakes (:mod:`conformance.platforms`) speak on the wire: AWS event-stream
frames, the platforms' error names, AWS Signature Version 4 checked with botocore, and a
Google service account's signed JWT checked with its key.

botocore and cryptography are imported only by the checks that need them (the ``bedrock``
and ``vertex`` extras bring them).
"""

from __future__ import annotations

import base64
import json
import re
import struct
import zlib
from typing import Any

__all__ = [
    "BEDROCK_ERRORS",
    "BEDROCK_VERSION",
    "GOOGLE_STATUSES",
    "GOOGLE_TOKEN_AUD",
    "STREAM_EXCEPTIONS",
    "VERTEX_VERSION",
    "event_frame",
    "jwt_signed_by",
    "new_key",
    "service_account_info",
    "sigv4_refusal",
    "version_ok",
]

BEDROCK_VERSION = "bedrock-2023-05-31"
VERTEX_VERSION = "vertex-2023-10-16"
GOOGLE_TOKEN_AUD = "https://oauth2.googleapis.com/token"

BEDROCK_ERRORS = {  # Anthropic status -> (Bedrock status, exception, message or None)
    400: (400, "ValidationException", None),
    401: (403, "UnrecognizedClientException", "The security token included in the request "
          "is invalid."),
    403: (403, "AccessDeniedException", None),
    404: (404, "ResourceNotFoundException", None),
    413: (400, "ValidationException", None),
    429: (429, "ThrottlingException", "Too many requests, please wait before trying again."),
    500: (500, "InternalServerException", None),
    529: (503, "ServiceUnavailableException", "Bedrock is unable to process your request."),
}  # fmt: skip
STREAM_EXCEPTIONS = {
    "overloaded_error": "serviceUnavailableException",
    "rate_limit_error": "throttlingException",
    "api_error": "internalServerException",
}
GOOGLE_STATUSES = {401: "UNAUTHENTICATED", 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED"}


def version_ok(body: dict[str, Any], platform_version: str) -> bool:
    """``anthropic_version`` in the body: the platform's documented one, or a dated Messages
    API version (what SDK 2.x sends on both platforms)."""
    version = body.get("anthropic_version")
    return version == platform_version or (
        isinstance(version, str) and re.fullmatch(r"20\d\d-\d\d-\d\d", version) is not None
    )


def _header(name: str, value: str) -> bytes:
    raw_name, raw_value = name.encode(), value.encode()
    return (
        bytes([len(raw_name)]) + raw_name + b"\x07" + struct.pack(">H", len(raw_value)) + raw_value
    )


def event_frame(headers: dict[str, str], payload: bytes) -> bytes:
    """One AWS event-stream message: prelude (total and headers length, CRC32), string
    headers, payload, and the message's CRC32."""
    encoded = b"".join(_header(name, value) for name, value in headers.items())
    total = 12 + len(encoded) + len(payload) + 4
    prelude = struct.pack(">II", total, len(encoded))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    message = prelude + encoded + payload
    return message + struct.pack(">I", zlib.crc32(message))


def sigv4_refusal(
    authorization: str,
    *,
    method: str,
    url: str,
    headers: dict[str, str],
    body: bytes,
    keys: tuple[str, str],
    region: str,
) -> tuple[str, str] | None:
    """Why Bedrock would refuse this request's Signature Version 4 (the exception's name and
    message), or None when it was signed by ``keys`` (access key, secret) for ``bedrock`` in
    ``region``: botocore computes the signature expected over the headers it names."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    fields = dict(
        part.strip().split("=", 1)
        for part in authorization.removeprefix("AWS4-HMAC-SHA256 ").split(",")
        if "=" in part
    )
    scope = fields.get("Credential", "").split("/")
    if len(scope) != 5 or scope[0] != keys[0]:
        return (
            "UnrecognizedClientException",
            "The security token included in the request is invalid.",
        )
    if scope[2:] != [region, "bedrock", "aws4_request"]:
        return (
            "InvalidSignatureException",
            f"Credential should be scoped to a valid region ({region}) and service (bedrock)",
        )
    signed = fields.get("SignedHeaders", "").split(";")
    kept = {name: value for name, value in headers.items() if name.lower() in signed}
    request = AWSRequest(method=method, url=url, data=body, headers=kept)
    request.context["timestamp"] = next(
        (value for name, value in headers.items() if name.lower() == "x-amz-date"), ""
    )
    signer = SigV4Auth(Credentials(*keys), "bedrock", region)
    canonical = signer.canonical_request(request)
    expected = signer.signature(signer.string_to_sign(request, canonical), request)
    if fields.get("Signature") != expected:
        return (
            "InvalidSignatureException",
            "The request signature we calculated does not match the signature you provided.",
        )
    return None


def new_key() -> Any:
    """A fresh RSA key for a fake service account."""
    from cryptography.hazmat.primitives.asymmetric import rsa

    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def service_account_info(key: Any, email: str, project_id: str, token_uri: str) -> dict[str, str]:
    """A service account's key file, as Google issues it, for ``key``."""
    from cryptography.hazmat.primitives import serialization

    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    return {
        "type": "service_account",
        "project_id": project_id,
        "private_key_id": "fake-key-1",
        "private_key": pem,
        "client_email": email,
        "client_id": "100000000000000000001",
        "token_uri": token_uri,
    }


def jwt_signed_by(assertion: str, key: Any, email: str) -> bool:
    """A service account's JWT (RS256) signed by ``key``, issued by ``email`` for Google's
    token endpoint (the audience google-auth signs for, whatever ``token_uri`` says)."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding

    def decoded(part: str) -> bytes:
        return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))

    parts = assertion.split(".")
    if len(parts) != 3:
        return False
    try:
        key.public_key().verify(
            decoded(parts[2]),
            f"{parts[0]}.{parts[1]}".encode(),
            padding.PKCS1v15(),
            hashes.SHA256(),
        )
        claims = json.loads(decoded(parts[1]))
    except (InvalidSignature, ValueError):
        return False
    return bool(claims.get("iss") == email and claims.get("aud") == GOOGLE_TOKEN_AUD)
