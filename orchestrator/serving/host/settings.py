"""Whose provider settings a host's pods use, and telling a client when they are not its own.

A pod in a host talks to the Messages API with the host's environment: the
``ANTHROPIC_BASE_URL`` and key the host was started with, not those of the shell that loaded
the pod. A ``pod run`` from a shell with another endpoint or key must not silently send its
prompt to the host's endpoint, billed to the host's key: the client sends salted digests of its
own settings, the host compares them with digests of its own under the same salt, and a
difference is refused with what to do (:func:`mismatch_message`).

Neither side writes or sends a value: only HMAC-SHA256 digests under a salt the client draws
for each request, so a digest seen twice tells nothing, and which variables differ is all the
answer says.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from collections.abc import Mapping
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from orchestrator.config.model import PodConfig

__all__ = [
    "PROVIDER_ENV",
    "ProviderSettings",
    "differing_settings",
    "mismatch_message",
    "provider_settings",
    "uses_provider_env",
]

PROVIDER_ENV = ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
"""The variables that choose where a pod's requests go and whose account pays for them (what
the Anthropic SDK reads, and what ``provider`` left unset falls back on)."""

_UNSET = b"\x00unset"


class ProviderSettings(BaseModel):
    """A client's provider settings as digests (``load``, ``register`` and ``check``)."""

    model_config = ConfigDict(extra="forbid")

    salt: str
    """Hex; drawn by the client for this request."""
    digests: dict[str, str]
    """Per name of :data:`PROVIDER_ENV`: HMAC-SHA256 of its value (or of "unset") under
    ``salt``."""


def _digest(salt: bytes, value: str | None) -> str:
    message = _UNSET if value is None else b"\x01" + value.encode("utf-8", "surrogatepass")
    return hmac.new(salt, message, hashlib.sha256).hexdigest()


def provider_settings(environ: Mapping[str, str] | None = None) -> ProviderSettings:
    """This process's provider settings as digests under a fresh salt."""
    env = os.environ if environ is None else environ
    salt = secrets.token_bytes(16)
    return ProviderSettings(
        salt=salt.hex(), digests={name: _digest(salt, env.get(name)) for name in PROVIDER_ENV}
    )


def differing_settings(
    theirs: ProviderSettings, environ: Mapping[str, str] | None = None
) -> list[str]:
    """The names of :data:`PROVIDER_ENV` whose value here (the host's environment) is not the
    client's; every name when the client's digests cannot be read."""
    env = os.environ if environ is None else environ
    try:
        salt = bytes.fromhex(theirs.salt)
    except ValueError:
        return list(PROVIDER_ENV)
    return [
        name
        for name in PROVIDER_ENV
        if not hmac.compare_digest(theirs.digests.get(name, ""), _digest(salt, env.get(name)))
    ]


def uses_provider_env(config: PodConfig) -> bool:
    """Whether a pod of this configuration reads the provider settings: any but one set to the
    offline ``scripted`` provider (left unset, the provider itself follows the API key)."""
    return config.provider != "scripted"


def mismatch_message(names: list[str], *, pod: str | None = None) -> str:
    """What a client whose provider settings differ from the host's is told, and what to do.

    ``pod``: the name of a pod the host already serves for the client's workspace (the client
    would join it); None when the host was asked to load a new one.
    """
    which = " and ".join(", ".join(names).rsplit(", ", 1)) if names else "provider settings"
    said = (
        f"the running pod host was started with another {which} than yours, and its pods "
        "use the host's settings, never the caller's"
    )
    if pod is not None:
        return (
            f"pod {pod} runs in the pod host, which was started with another {which} than "
            "yours: its requests would go with the host's settings, not yours. To use yours, "
            f"`pod shutdown {pod}` and run again with --no-host (a pod process of its own), "
            "or `pod host stop` (every pod of the host stops) and run again"
        )
    return (
        f"{said}. To use yours, run again with --no-host (a pod process of its own), or "
        "stop the host with `pod host stop` (every pod of it stops) and run again"
    )
