"""The HTTP API as the CLI starts it (docs/http.md): ``pod host --http``, ``host.http`` for the
host a run starts, ``pod serve --http``.

Imported only when one of them asks: FastAPI and uvicorn stay out of every other command.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from cli.errors import CliError

if TYPE_CHECKING:
    from orchestrator.config.model import PodConfig
    from orchestrator.serving.host import Host
    from orchestrator.serving.http import AddPod, HttpAddress, HttpServer

__all__ = ["http_address", "run_host_with_http", "serve_pod_http"]


def http_address(value: str, *, public: bool = False) -> HttpAddress:
    """``--http``'s value, or a one-line error (a non-loopback one needs ``--http-public``);
    and the extra, or what to install."""
    from orchestrator.serving.http.address import HttpAddressError, parse_http_address

    try:
        address = parse_http_address(value, public=public)
    except HttpAddressError as exc:
        raise CliError(str(exc)) from None
    try:
        import fastapi  # noqa: F401
        import sse_starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        raise CliError(
            f"the HTTP API needs the http extra ({exc.name} is missing): "
            "pip install 'pod-orchestrator[http]'"
        ) from None
    return address


def configure_pod(workspace: Path, body: AddPod) -> PodConfig:
    """The config ``pod run`` would load into the host for ``workspace`` (the user's config,
    the workspace's with its grants refused, ``model`` on top), as ``POST /v1/pods`` adds it."""
    from cli.pods.discovery import default_name
    from cli.pods.start import host_config
    from cli.start_options import StartOptions
    from orchestrator.serving.http.context import ApiError

    name = body.name or default_name(workspace)
    try:
        return host_config(workspace, StartOptions(model=body.model), None, name=name)
    except CliError as exc:
        raise ApiError(422, "invalid_config", str(exc)) from None


async def run_host_with_http(host: Host, address: HttpAddress | None) -> None:
    """:func:`orchestrator.serving.host.run_host`, with the API served beside it (when
    ``address``) and stopped before the pods are."""
    from orchestrator.serving.host import run_host

    if address is None:
        await run_host(host)
        return
    from orchestrator.serving.http.address import host_http_info_path
    from orchestrator.serving.http.hosting import host_context
    from orchestrator.serving.http.server import start_http

    await host.start()
    host.install_signals()
    try:
        server = await start_http(host_context(host, configure_pod), address, host_http_info_path())
    except BaseException:
        await host.close()
        raise
    try:
        await host.stopped.wait()
    finally:
        await server.stop()
        await host.close()


async def serve_pod_http(name: str, socket: Path, address: HttpAddress) -> HttpServer:
    """The API on one pod served by this process (``pod serve --http``)."""
    from orchestrator.serving.http.address import pod_http_info_path
    from orchestrator.serving.http.hosting import pod_context
    from orchestrator.serving.http.server import start_http

    return await start_http(pod_context(name, socket), address, pod_http_info_path(socket))
