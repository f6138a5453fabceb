"""Serving a built pod: its socket, its info file, the signals that stop it, and the one
close that ends it (a shutdown) or unloads it (a host's eviction).

``serve_pod`` is what ``pod serve`` runs: it builds everything, listens on the socket, and
returns when the pod is shut down (by the ``shutdown`` method or SIGTERM/SIGINT/SIGHUP). A
host calls :func:`open_pod` for each pod it loads, with a :class:`Hosting` that says what the
host gives its pods.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
import os
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.adapters.procs import Ledger
from orchestrator.adapters.providers.base import Provider
from orchestrator.adapters.sandbox.sandboxing import Sandboxing
from orchestrator.adapters.session import Fence, SessionWriteError, session_write_pool
from orchestrator.capabilities.hooks.chain import InterceptorChain
from orchestrator.capabilities.subpods.launcher import ChildLauncher
from orchestrator.capabilities.tools.base import ClosableTool
from orchestrator.config.model import PodConfig
from orchestrator.config.paths import pod_info_path
from orchestrator.errors import SetupError
from orchestrator.runtime.controller import Controller
from orchestrator.runtime.unload import UnloadBlocked, unload_session
from orchestrator.serving.pod.assemble import Pod, PodSetupError, build_pod
from orchestrator.serving.pod.outside import (
    open_sandbox,
    recover_held,
    served_sockets,
    start_mcp_servers,
    supervise_commands,
)
from orchestrator.serving.pod.session import open_session_async
from orchestrator.serving.pod.upward import UpwardReporter
from orchestrator.serving.server import PodServer

if TYPE_CHECKING:
    from orchestrator.adapters.mcp.servers import McpServers

__all__ = [
    "STOP_SIGNALS",
    "SWITCH_INTERVAL_S",
    "Hosting",
    "ServedPod",
    "drop_reply",
    "open_pod",
    "prepare_process",
    "serve_pod",
    "write_pod_info",
]

log = logging.getLogger(__name__)

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
"""Each shuts the pod down cleanly; SIGHUP too (a closed terminal), which would kill it
outright otherwise."""


def drop_reply(line: bytes) -> None:
    """Reply sink for methods a pod is sent by its own process (signals, a host's stop)."""


@dataclass(frozen=True, kw_only=True)
class Hosting:
    """What the host serving a pod gives it (``orchestrator/serving/host``), so that the pod
    never imports the host that imports it."""

    launcher: ChildLauncher
    """How the pod's ``task`` children start: as pods of the same host."""
    hidden: Callable[[], tuple[Path, ...]]
    """What the pod's sandbox must not see of the host, asked when the pod is opened: its
    control socket and folder, the sockets of its other pods, a fleet's root."""


def write_pod_info(socket_path: Path, config: PodConfig, session_path: Path) -> Path:
    """Leave an info file in the runtime directory so ``pod ls`` can describe live pods."""
    info = pod_info_path(socket_path)
    data = {
        "name": config.pod_name(),
        "pid": os.getpid(),
        "socket": str(socket_path),
        "workspace": str(config.workspace),
        "session": str(session_path),
    }
    if config.subpods.parent:
        data["parent"] = config.subpods.parent
    # O_NOFOLLOW: a link planted beside the socket must not redirect the write.
    fd = os.open(info, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(data, f)
    return info


SWITCH_INTERVAL_S = 0.0005
"""How long a worker thread may hold the GIL before the event loop gets it back."""


@dataclass(eq=False)
class ServedPod:
    """A pod that is built and serves clients: what :func:`open_pod` started, and the one
    :meth:`close` that ends it (a shutdown) or unloads it (an eviction)."""

    pod: Pod
    server: PodServer
    stopped: asyncio.Event
    """Set when the machine reaches ``stopped`` (a client's ``shutdown``)."""
    info: Path
    ledger: Ledger | None = None
    mcp: McpServers | None = None
    sandboxing: Sandboxing | None = None
    upward: UpwardReporter | None = None

    @property
    def controller(self) -> Controller:
        """The pod's controller."""
        return self.pod.controller

    def request_shutdown(self) -> None:
        """Send the pod ``shutdown`` as a client would (:attr:`stopped` is set once it
        stopped)."""
        self.pod.methods.handle("shutdown", None, None, drop_reply)

    async def close(self, *, unload: bool = False) -> None:
        """End everything the pod started and close its session file.

        ``unload`` (a host evicting an idle or paused pod): the machine is not sent
        ``shutdown``, which from ``paused`` would close the turn; the session file is left as
        a crash would leave it, minus the crash, and loading it again brings the pod back.
        """
        controller = self.controller
        if self.upward is not None:
            await self.upward.flush()
        with contextlib.suppress(SessionWriteError):
            # What was committed last (a shutdown's closing records) and the events behind it
            # reach the clients before their connections close.
            await controller.transcript.settled()
        await self.server.close()
        if controller.jobs is not None:
            await controller.jobs.close()  # before the session closes: their ends are recorded
        for tool in controller.tools.registry:
            if isinstance(tool, ClosableTool):
                await tool.aclose()
        await controller.close_hooks()
        if self.ledger is not None:
            self.ledger.close()
        if self.mcp is not None:
            await self.mcp.close()
        if self.sandboxing is not None:
            await self.sandboxing.aclose()  # after the programs that used its proxy
        if unload:
            try:
                unload_session(controller)  # what it held in memory, then the file closed
            except UnloadBlocked as exc:
                # Checked before the close began; something changed meanwhile. The pod is
                # closed as a crash would leave it, which a load recovers from.
                log.warning("unloading %s: %s", self.pod.session_path.name, exc)
                controller.transcript.close()
        else:
            # A session nobody said a word in is not kept (`pod chat --new` then quit).
            controller.transcript.close(discard_if_empty=True)
        if not unload:
            with contextlib.suppress(FileNotFoundError):
                self.info.unlink()


def prepare_process() -> None:
    """What a process serving pods sets once, whatever number of pods it serves."""
    # Long work (wiring a long loaded history, shrinking a summary request) runs in a thread
    # while the loop answers clients; with the default 5 ms switch interval, each syscall the
    # loop makes could wait that long for the GIL, and a status reply makes several.
    sys.setswitchinterval(min(sys.getswitchinterval(), SWITCH_INTERVAL_S))


async def open_pod(
    config: PodConfig,
    *,
    socket_path: Path,
    continue_: bool = False,
    provider: Provider | None = None,
    interceptors: InterceptorChain | None = None,
    listen: bool = True,
    fence: Fence | None = None,
    hosting: Hosting | None = None,
) -> ServedPod:
    """Build the pod and start serving it on ``socket_path``.

    ``listen=False`` (a host): the socket is someone else's, who hands connections over with
    ``server.serve_connection``. ``fence``: a fleet pod's ownership epoch (:func:`build_pod`).
    ``hosting``: what the host serving the pod gives it (None: a pod of its own).
    """
    server: PodServer | None = None
    stopped = asyncio.Event()

    def broadcast(line: bytes) -> None:
        if server is not None:
            server.broadcast(line)

    upward = (
        UpwardReporter(config.parent_socket, config.pod_name()) if config.parent_socket else None
    )
    # Read, parsed and repaired on a worker thread: a host's other pods go on meanwhile.
    opened = await open_session_async(config, continue_=continue_)
    pod = build_pod(
        config,
        broadcast=broadcast,
        provider=provider,
        continue_=continue_,
        upward=upward,
        interceptors=interceptors,
        holder={"socket": str(socket_path)},
        on_stopped=stopped.set,
        opened=opened,
        fence=fence,
        launcher=hosting.launcher if hosting is not None else None,
    )
    controller = pod.controller
    ledger = supervise_commands(controller)
    recover_held(controller, config)
    try:
        hidden = hosting.hidden() if hosting is not None else ()
        sockets = served_sockets(socket_path, parent=config.parent_socket, hidden=hidden)
        sandboxing = await open_sandbox(controller, config, sockets)
    except BaseException:
        if ledger is not None:
            ledger.close()
        raise
    # A loaded history is millions of long-lived objects; a full collection walking them all
    # holds the GIL for a few hundred milliseconds, which clients feel as a frozen pod. They
    # live as long as the pod, so the collector can leave them out.
    gc.freeze()
    mcp = await start_mcp_servers(config, controller, sandboxing)
    server = PodServer(socket_path, pod.methods.handle)
    try:
        if listen:
            await server.start()
    except BaseException:
        if mcp is not None:
            await mcp.close()
        if sandboxing is not None:
            await sandboxing.aclose()
        if ledger is not None:
            ledger.close()
        controller.transcript.close()
        raise
    controller.transcript.serving = True
    # Clients from here on: commits are written off the loop, grouped (a host's other pods
    # must not wait on this one's disk).
    controller.transcript.write_in_background(session_write_pool())
    try:
        info = write_pod_info(socket_path, config, pod.session_path)
    except (OSError, SetupError) as exc:
        await server.close()
        if mcp is not None:
            await mcp.close()
        if sandboxing is not None:
            await sandboxing.aclose()
        controller.transcript.close()
        if ledger is not None:
            ledger.close()
        why = exc.strerror if isinstance(exc, OSError) else str(exc)
        raise PodSetupError(f"cannot write the pod's info file: {why}") from None
    if pod.loaded is None or pod.loaded.unloaded is None:
        # A pod unloaded and loaded again is the same session going on: its hooks ran, and
        # what they added was kept for its next turn.
        controller.start_session_hooks("resume" if pod.loaded is not None else "startup")
    return ServedPod(
        pod=pod,
        server=server,
        stopped=stopped,
        info=info,
        ledger=ledger,
        mcp=mcp,
        sandboxing=sandboxing,
        upward=upward,
    )


async def serve_pod(
    config: PodConfig,
    *,
    socket_path: Path,
    continue_: bool = False,
    provider: Provider | None = None,
    ready: asyncio.Event | None = None,
    interceptors: InterceptorChain | None = None,
) -> Pod:
    """Build the pod, serve it on ``socket_path`` until it stops, and return it."""
    prepare_process()
    served = await open_pod(
        config,
        socket_path=socket_path,
        continue_=continue_,
        provider=provider,
        interceptors=interceptors,
    )
    loop = asyncio.get_running_loop()
    for sig in STOP_SIGNALS:
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, served.request_shutdown)
    if ready is not None:
        ready.set()
    try:
        await served.stopped.wait()
        await served.controller.wait_idle()
    finally:
        await served.close()
        for sig in STOP_SIGNALS:
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(sig)
    return served.pod
