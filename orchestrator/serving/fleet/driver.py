"""Joining a fleet's Ray cluster as a driver (what every ``pod fleet`` command does first):
with that cluster's token, and on loopback when its head listens there only."""

from __future__ import annotations

import logging
import os
import socket
from typing import Any

import ray

from orchestrator.serving.fleet.clusters import (
    cluster_at,
    is_loopback,
    local_clusters,
    split_address,
)
from orchestrator.serving.fleet.directory import NAMESPACE, FleetError


def answers(address: str) -> str | None:
    """None when something listens at ``host:port``; else why not (Ray itself would retry
    for minutes)."""
    host, port = split_address(address)
    if port is None:
        return "not host:port"
    try:
        with socket.create_connection((host or "127.0.0.1", port), timeout=5):
            return None
    except OSError as exc:
        return exc.strerror or str(exc)


def use_ray_token(mode: str | None, token_path: str | None) -> None:
    """Have this process (a driver, and what it starts) use Ray's authentication ``mode``
    and the token in ``token_path``; None keeps what the environment says. Ray reads its
    settings when it is imported: they are read again here."""
    if token_path:
        os.environ["RAY_AUTH_TOKEN_PATH"] = token_path
        os.environ.pop("RAY_AUTH_TOKEN", None)  # read before the path: the path must win
        mode = mode or "token"
    if mode:
        os.environ["RAY_AUTH_MODE"] = mode
    from ray._raylet import (  # type: ignore[attr-defined]
        AuthenticationTokenLoader,
        Config,
    )

    Config.initialize("")
    AuthenticationTokenLoader.instance().reset_cache()


def _keep_loopback() -> None:
    """Ray turns a loopback address into the machine's outward one before it connects; a
    head listening on loopback only is not there. Kept as given for this process."""
    import ray._private.services as services

    services.resolve_ip_for_localhost = lambda host: host


def connect(address: str, *, token_path: str | None = None) -> None:
    """Join the Ray cluster at ``address`` (``host:port``) as a driver (once per process),
    with its token: ``token_path``, else the one its GCS uses when it runs on this machine,
    else what Ray's environment says. :class:`FleetError` at once when nothing listens there
    (Ray itself would retry for minutes)."""
    if ray.is_initialized():
        return
    why = answers(address)
    if why is not None:
        raise FleetError(
            f"no Ray cluster answers at {address} ({why}); start one with `pod fleet up`"
        )
    here = cluster_at(address, local_clusters())
    use_ray_token(
        here.auth_mode if here is not None and here.auth_mode else None,
        token_path or (here.token_path if here is not None else None),
    )
    extra: dict[str, Any] = {}
    if here is not None and is_loopback(here.node_ip):
        _keep_loopback()
        extra["_node_ip_address"] = here.node_ip
        address = f"{here.node_ip}:{here.port}"
    try:
        ray.init(
            address=address,
            namespace=NAMESPACE,
            log_to_driver=False,
            logging_level=logging.WARNING,
            **extra,
        )
    except ray.exceptions.AuthenticationError as exc:
        raise FleetError(f"the Ray cluster at {address} refused this driver: {exc}") from None


__all__ = ["answers", "connect", "use_ray_token"]
