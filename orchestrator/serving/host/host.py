"""``pod host``: one process serving many pods, each on its own socket, loaded while used and
unloaded to its session file when idle.

:class:`Host` is the process: its control socket and the requests it answers, its signals,
and how it ends (every pod shut down, or detached for the next host). The pods it serves are
:class:`~orchestrator.serving.host.pods.PodSet`'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from orchestrator.config.model import PodConfig
from orchestrator.errors import OrchestratorError
from orchestrator.protocol import MAX_LINE_BYTES
from orchestrator.serving.host.address import control_socket
from orchestrator.serving.host.control import (
    CheckParams,
    EvictParams,
    HostError,
    HostReply,
    HostRequest,
    LoadParams,
    forbidden_reply,
)
from orchestrator.serving.host.memory import process_memory
from orchestrator.serving.host.pods import IDLE_EXIT_S, IDLE_UNLOAD_S, PodSet
from orchestrator.serving.host.registry import read_registry
from orchestrator.serving.host.settings import (
    ProviderSettings,
    differing_settings,
    mismatch_message,
    uses_provider_env,
)
from orchestrator.serving.host.slot import EvictRefused, PodSlot
from orchestrator.serving.peer import admit_peer
from orchestrator.serving.pod import STOP_SIGNALS, prepare_process
from orchestrator.serving.server import bind_socket

__all__ = [
    "IDLE_EXIT_S",
    "IDLE_UNLOAD_S",
    "Host",
    "HostError",
    "control_socket",
    "run_host",
]

log = logging.getLogger(__name__)


@dataclass(eq=False)
class Host(PodSet):
    """The pods of one host process, and its control socket."""

    _control: asyncio.Server | None = None
    _sweeper: asyncio.Task[None] | None = None
    _connections: dict[asyncio.StreamWriter, asyncio.Task[Any]] = field(default_factory=dict)
    """Open control connections (``pod acp``'s among them) and the tasks serving them."""

    async def start(self) -> None:
        """Listen for control requests and bind the sockets of the pods a previous host of
        this user served (they load, from their sessions, when a client connects)."""
        prepare_process()
        baseline = process_memory()
        self.baseline_rss_bytes = baseline.rss_bytes if baseline is not None else None
        # First: a second host is refused here, so the entries of the registry are those of
        # a host that is gone (its control socket stale), killed or detached.
        control = bind_socket(self.control_path)
        for entry in read_registry(self.registry_path):
            try:
                config = PodConfig.from_portable(entry["config"])
                await self.register(
                    config, Path(entry["socket"]), continue_=True, save=False, restored=True
                )
            except Exception as exc:
                # One bad entry (its socket live again, served by another process) must not
                # keep the others down.
                log.warning("could not serve %s again: %s", entry.get("socket"), exc)
        if self.slots:
            log.info(
                "serving again %d pod(s) a previous host left; until a client uses one, "
                "they do not keep this host running",
                len(self.slots),
            )
        self._save_registry()
        # Only now answered: a client that finds the host up finds every pod of it too.
        # A list of a thousand pods, or a configuration with many MCP servers, is one line.
        self._control = await asyncio.start_unix_server(
            self._serve_control, sock=control, limit=MAX_LINE_BYTES
        )
        self._sweeper = asyncio.create_task(self._sweep())

    def install_signals(self) -> None:
        """Stop cleanly on SIGTERM, SIGINT and SIGHUP (the host owns the process's signals)."""
        loop = asyncio.get_running_loop()
        for sig in STOP_SIGNALS:
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self.stopped.set)

    async def serve_forever(self) -> None:
        """Until asked to stop; then shut every pod down."""
        await self.stopped.wait()
        await self.close()

    def _stop_listening(self) -> None:
        """No more control requests, no more idle sweeps, no idle exit."""
        self._stay()
        if self._sweeper is not None:
            self._sweeper.cancel()
        if self._control is not None:
            self._control.close()
            with contextlib.suppress(OSError):
                self.control_path.unlink()

    async def close(self) -> None:
        """Shut down every pod and stop listening. A host leaving with its last pod of its
        own (``exit_when_empty``) keeps the restored pods nobody used registered instead."""
        self._stop_listening()
        kept = [s for s in self.slots.values() if s.restored] if self._left_empty else []
        slots = [s for s in self.slots.values() if s not in kept]
        await asyncio.gather(*(slot.shutdown() for slot in slots), return_exceptions=True)
        for slot in kept:  # not loaded: nothing of theirs to shut down, only their sockets
            await slot.unbind()
        self.slots = {slot.name: slot for slot in kept}
        if kept:
            self._save_registry()
        else:
            with contextlib.suppress(OSError):
                self.registry_path.unlink()
        self.slots.clear()
        await self._end_connections()
        for sig in STOP_SIGNALS:
            with contextlib.suppress(NotImplementedError, RuntimeError):
                asyncio.get_running_loop().remove_signal_handler(sig)

    async def detach(self) -> None:
        """Stop serving but keep the pods registered: each is unloaded (shut down when it may
        not be), and the next host of this user binds them again (an upgrade, a restart)."""
        self._stop_listening()
        self._save_registry()
        for slot in list(self.slots.values()):
            try:
                await slot.evict()
            except EvictRefused:
                await slot.shutdown()
            await slot.unbind()
        self.slots.clear()
        await self._end_connections()

    async def _end_connections(self) -> None:
        """Close the open control connections and let their tasks end on their own: a task
        still waiting on one when the loop stops is cancelled, and asyncio's stream callback
        (3.11) logs that cancellation as a traceback in host.log."""
        for writer in list(self._connections):
            writer.close()
        tasks = list(self._connections.values())
        if tasks:
            await asyncio.wait(tasks, timeout=10.0)

    # -- the control socket ------------------------------------------------------------------

    async def _serve_control(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        # A sandboxed command must never load a pod here (one configured by it, unsandboxed).
        if await admit_peer(writer, server="the pod host", refusal=forbidden_reply) is None:
            return
        owned: list[PodSlot] = []
        """Pods this connection loaded with ``owned``: they end with it."""
        task = asyncio.current_task()
        if task is not None:
            self._connections[writer] = task
        try:
            while line := await reader.readline():
                reply = await self._answer(line, owned)
                writer.write(reply.model_dump_json().encode() + b"\n")
                await writer.drain()
                if reply.ok and reply.data == "stopping":
                    self.stopped.set()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self._connections.pop(writer, None)
            writer.close()
            if owned:  # the owner is gone, however it ended (a kill -9 included)
                await self.shut_down(owned)

    async def _answer(self, line: bytes, owned: list[PodSlot]) -> HostReply:
        try:
            request = HostRequest.model_validate_json(line)
        except ValidationError as exc:
            return HostReply(ok=False, error=f"not a host request: {exc.errors()[0]['msg']}")
        try:
            data = await self._dispatch(request, owned)
        except (ValidationError, OSError, OrchestratorError) as exc:  # a pod's setup error too
            return HostReply(id=request.id, ok=False, error=str(exc))
        except Exception as exc:  # one bad request must not take the host down
            log.exception("host request %s failed", request.method)
            return HostReply(id=request.id, ok=False, error=f"{type(exc).__name__}: {exc}")
        return HostReply(id=request.id, ok=True, data=data)

    async def _dispatch(self, request: HostRequest, owned: list[PodSlot]) -> Any:
        if request.method == "list":
            return self.listing().model_dump()
        if request.method == "evict":
            await self.evict(EvictParams.model_validate(request.params).name)
            return None
        if request.method == "release":
            names = await self.shut_down(owned)
            owned.clear()
            return names
        if request.method == "stop":
            return "stopping"
        if request.method == "check":
            check = CheckParams.model_validate(request.params)
            return self.settings_differ(check.provider_settings, Path(check.socket))
        params = LoadParams.model_validate(request.params)
        config = PodConfig.from_portable(params.config)
        socket = Path(params.socket) if params.socket else None
        if params.provider_settings is not None:
            self._refuse_other_settings(params.provider_settings, config)
        if request.method == "register":
            if params.owned:
                # An owned pod is one its owner is using now: that is a load.
                raise HostError("register takes no owned pods (load them)")
            slot = await self.register(config, socket, continue_=params.continue_)
            return next(row.model_dump() for row in self.rows() if row.name == slot.name)
        slot = await self.load(config, socket, continue_=params.continue_, owned=params.owned)
        if params.owned:
            owned.append(slot)
        return next(row.model_dump() for row in self.rows() if row.name == slot.name)

    def settings_differ(self, theirs: ProviderSettings, socket: Path) -> list[str]:
        """Which provider settings of a client the pod served on ``socket`` would not use (the
        host's own environment is what its pods use): none when no pod is served there."""
        slot = next((s for s in self.slots.values() if s.socket_path == socket), None)
        if slot is None or not uses_provider_env(slot.config):
            return []
        return differing_settings(theirs)

    def _refuse_other_settings(self, theirs: ProviderSettings, config: PodConfig) -> None:
        """A client must never have its prompt sent with the host's endpoint and key while it
        believes its own are used: refused, with what to do (``orchestrator/serving/host/settings.py``)."""
        slot = self.slots.get(config.pod_name())
        if not uses_provider_env(slot.config if slot is not None else config):
            return
        names = differing_settings(theirs)
        if names:
            raise HostError(mismatch_message(names, pod=slot.name if slot is not None else None))


async def run_host(host: Host) -> None:
    """Start the host, serve until a signal or ``stop``, then shut every pod down."""
    await host.start()
    host.install_signals()
    await host.serve_forever()
