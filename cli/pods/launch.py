"""Starting the pods of ``pod acp``: one a session, owned by ``pod acp`` so that none outlives
it (in the host, over a control connection it keeps; or as a supervised child process)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from cli.errors import CliError
from cli.pods.start import ensure_host, host_config, provider_settings
from cli.start_options import StartOptions
from orchestrator.config.paths import runtime_dir
from orchestrator.serving.start_timeout import START_TIMEOUT_S

if TYPE_CHECKING:
    from cli.acp import LaunchedPod

__all__ = ["POD_STOP_GRACE_S", "launch_in_host", "launch_serve_process"]


POD_STOP_GRACE_S = 10.0
"""How long a pod that ``pod acp`` started has to shut down cleanly when ``pod acp`` ends
without asking it to (a signal, a kill -9) before it is killed."""


async def launch_serve_process(
    workspace: Path,
    session: Path | None,
    *,
    name: str,
    serve_args: list[str],
    stdin_data: bytes | None = None,
    timeout_s: float = START_TIMEOUT_S,
) -> LaunchedPod:
    """Start ``pod serve`` for a workspace as a child process (``pod acp``'s pods).

    ``session`` names the session file to continue; None starts a new one. ``stdin_data`` is
    written to the pod's stdin, then closed (what must not be on a command line). The pod's
    output goes to a private log in the runtime dir. The pod is a process of its own, so it and
    the caller each get a core; the caller shuts it down and then calls ``stop``. It runs under
    a supervisor (``orchestrator/adapters/procs``), so it stops when the caller dies, even by kill -9.
    """
    import asyncio

    from cli.acp import LaunchedPod, PodLaunchError
    from orchestrator.adapters.procs import Supervision
    from orchestrator.serving.launch import LaunchError, start_serve_process

    base = runtime_dir()
    args = ["--name", name, *serve_args]
    if session is not None:
        args += ["--session", str(session.resolve())]
    try:
        started = await start_serve_process(
            workspace,
            socket=base / f"{name}.sock",
            log_path=base / f"{name}.log",
            serve_args=args,
            supervision=Supervision(grace_s=POD_STOP_GRACE_S, main_first=True),
            stdin_data=stdin_data,
            timeout_s=timeout_s,
        )
    except LaunchError as exc:
        raise PodLaunchError(str(exc)) from None
    proc = started.proc

    async def stop() -> None:
        try:
            await asyncio.wait_for(asyncio.shield(proc.process.wait()), 30)
        except TimeoutError:
            await proc.close()

    return LaunchedPod(socket=started.socket, stop=stop)


async def launch_in_host(
    workspace: Path,
    session: Path | None,
    *,
    name: str,
    options: StartOptions,
    script: Path | None = None,
    mcp_servers: dict[str, Any] | None = None,
) -> LaunchedPod:
    """Load a pod for ``pod acp`` into this user's host (started if none runs), owned by a
    control connection that ``pod acp`` keeps open: the host shuts the pod down when it is
    released or when that connection closes, so the pod never outlives ``pod acp``, even
    after a kill -9. ``session`` names the session file to continue; None starts a new one.

    The editor's MCP servers (their headers and env hold secrets) travel in the request on
    the host's private socket, never on a command line, and an owned pod is never written to
    the host's registry.
    """
    import asyncio

    from cli.acp import LaunchedPod, PodLaunchError
    from orchestrator.serving.host import HostConnection, HostError

    try:
        config = host_config(
            workspace, options, session, name=name, script=script, mcp_servers=mcp_servers
        )
        await asyncio.to_thread(ensure_host)
    except CliError as exc:
        raise PodLaunchError(str(exc)) from None
    socket = runtime_dir() / f"{name}.sock"
    params = {
        "config": config.portable(),
        "continue": False,
        "socket": str(socket),
        "owned": True,
        "provider_settings": provider_settings(),
    }
    try:
        connection = await HostConnection.open()
    except HostError as exc:
        raise PodLaunchError(str(exc)) from None
    try:
        await connection.request("load", params)
    except HostError as exc:
        await connection.close()
        raise PodLaunchError(f"the pod host could not load {name}: {exc}") from None

    async def stop() -> None:
        # After the pod was sent `shutdown`: wait until the host has shut it down and
        # forgotten it (or does so now), then let the connection go.
        try:
            await connection.request("release", timeout=POD_STOP_GRACE_S + 30)
        except HostError:
            pass  # the host is gone: so is the pod
        finally:
            await connection.close()

    return LaunchedPod(socket=socket, stop=stop)
