"""Reaching a pod from a program: by its socket, through this user's pod host (by name or
workspace), or through the HTTP API; and starting one in the host as ``pod chat`` does.

Each returns a connected client with the same calls
(:class:`~orchestrator.serving.pod_calls.PodCalls`): a
:class:`~orchestrator.serving.client.PodClient` for a socket or a host's pod, an
:class:`~orchestrator.serving.sdk.http.HttpPodClient` for the HTTP API. docs/sdk.md.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from orchestrator.config.paths import safe_pod_name
from orchestrator.serving.client import PodClient
from orchestrator.serving.client_errors import ClientError
from orchestrator.serving.host.control import HostError, HostListing, PodRow
from orchestrator.serving.pod_calls import PodCalls

__all__ = ["connect", "connect_host", "connect_http", "find_in_host", "start_pod"]


async def find_in_host(pod: str | Path, *, control: Path | None = None) -> PodRow:
    """The row of the host's pod named ``pod``, or serving the workspace ``pod`` (a path);
    :class:`ClientError` when the host has none (or no host runs)."""
    from orchestrator.serving.host.client import ask_host

    try:
        listing = HostListing.model_validate(await ask_host("list", path=control))
    except HostError as exc:
        raise ClientError(str(exc)) from None
    workspace = Path(pod).expanduser().resolve() if isinstance(pod, Path) else None
    for row in listing.pods:
        if row.name == str(pod) or (workspace is not None and Path(row.workspace) == workspace):
            return row
    names = ", ".join(row.name for row in listing.pods) or "none"
    raise ClientError(f"the pod host serves no pod {str(pod)!r} (its pods: {names})")


async def connect_host(
    pod: str | Path, *, control: Path | None = None, after: str | None = None
) -> PodClient:
    """Connect to a pod of this user's host, by name (a ``str``) or workspace (a ``Path``):
    the host loads it if it was unloaded. ``control``: another host's control socket."""
    row = await find_in_host(pod, control=control)
    return await PodClient.connect(row.socket, after=after)


async def connect_http(
    pod: str,
    *,
    url: str | None = None,
    token: str | None = None,
    endpoint_file: Path | None = None,
    after: str | None = None,
) -> PodCalls:
    """Connect to pod ``pod`` through the HTTP API at ``url`` with ``token``; both are read
    from the server's ``_http.json`` when not given (the host's, in the runtime dir, or
    ``endpoint_file``)."""
    from orchestrator.serving.sdk.http import HttpPodClient

    return await HttpPodClient.connect(
        pod, url=url, token=token, endpoint_file=endpoint_file, after=after
    )


async def connect(
    pod: str | Path,
    *,
    http: bool = False,
    url: str | None = None,
    token: str | None = None,
    control: Path | None = None,
) -> PodCalls:
    """One way in for every case: with ``http`` (or a ``url``), the HTTP API's pod of that
    name; a socket file's path (a ``Path``, or a ``str`` with a ``/``) connects to it; else
    this user's host's pod of that name (a ``str``) or workspace (a ``Path``)."""
    if http or url is not None:
        return await connect_http(str(pod), url=url, token=token)
    path = Path(pod)
    if (isinstance(pod, Path) or "/" in pod) and path.is_socket():
        return await PodClient.connect(path)
    return await connect_host(pod, control=control)


async def start_pod(
    workspace: Path | str,
    *,
    name: str | None = None,
    permission_mode: str | None = None,
    continue_session: bool = False,
    control: Path | None = None,
    **options: Any,
) -> PodClient:
    """Start a pod for ``workspace`` in this user's pod host (started in the background if
    none runs; ``control`` names a host that runs already) and connect to it.

    Its configuration is what ``pod chat`` would load there: the user's config and the
    workspace's (without the grants a workspace may not give), then ``options``, config keys
    as a user's own (``model="…"``, ``provider="scripted"``…), and ``permission_mode``.
    ``continue_session`` takes up the workspace's latest session instead of a new one."""
    from orchestrator.config.loading import load_config
    from orchestrator.serving.host.address import host_running
    from orchestrator.serving.host.client import ask_host
    from orchestrator.serving.host.settings import provider_settings

    workspace = Path(workspace).expanduser().resolve()
    name = name or safe_pod_name(workspace.name or "root")
    if permission_mode is not None:
        options["permissions"] = {**options.get("permissions", {}), "mode": permission_mode}
    config = await asyncio.to_thread(load_config, workspace, name=name, **options)
    params = {
        "config": config.portable(),
        "continue": continue_session,
        "provider_settings": provider_settings().model_dump(),
    }
    for attempt in range(2):
        try:
            if control is None:
                from orchestrator.serving.host.starting import ensure_host

                await asyncio.to_thread(ensure_host)
            row = PodRow.model_validate(await ask_host("load", params, path=control))
            break
        except HostError as exc:
            if control is None and attempt == 0 and not host_running():
                continue  # a host leaving with its last pod: start another
            raise ClientError(str(exc)) from None
    if Path(row.workspace) != workspace:
        raise ClientError(
            f"the pod host already serves a pod named {name} for {row.workspace}; "
            "give this one another name"
        )
    return await PodClient.connect(row.socket)
