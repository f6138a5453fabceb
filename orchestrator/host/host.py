"""``pod host``: one process serving many pods, each on its own socket, loaded while used and
unloaded to its session file when idle."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import functools
import gc
import json
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from orchestrator.config import PodConfig
from orchestrator.errors import OrchestratorError, PodRuntimeError
from orchestrator.host.control import (
    EvictParams,
    HostListing,
    HostReply,
    HostRequest,
    HostStats,
    LoadParams,
    PodRow,
    forbidden_reply,
)
from orchestrator.host.memory import process_memory, split_shares
from orchestrator.host.slot import EvictRefused, PodSlot
from orchestrator.paths import default_socket, runtime_dir
from orchestrator.peer import admit_peer
from orchestrator.pod import STOP_SIGNALS, prepare_process
from orchestrator.protocol import MAX_LINE_BYTES
from orchestrator.server import bind_socket

log = logging.getLogger(__name__)

IDLE_UNLOAD_S = 600.0
SWEEP_EVERY_S = 1.0


class HostError(PodRuntimeError):
    """A request the host refuses; the message says why."""


RELEASE_AFTER_S = 1.0
"""After an eviction, how long the host waits for more before it frees what they held (one
full collection for a burst of evictions, not one each)."""


def release_unloaded() -> None:
    """Free what unloaded pods held. A loaded pod's objects are frozen out of the collector
    (``open_pod``: walking millions of history objects stalls every pod of the process), so
    their cycles are only ever freed here: unfreeze, collect, freeze what is still alive."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()
    _trim_heap()


def _trim_heap() -> None:
    """Give the C heap's free pages back to the system (glibc's ``malloc_trim``).

    An unloaded pod's memory returns to the allocator, not to the system: its arenas keep the
    freed pages, so a host that loaded a thousand sessions once stays that big. Trimming after
    a burst of evictions returns them; elsewhere (musl, macOS) it is skipped.
    """
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim() -> Any:
    """libc's ``malloc_trim``, looked up once (``find_library`` runs a program), or None."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    return trim


_serving: list[Host] = []
"""The host this process is, while it is one (:func:`serving_host`)."""


def serving_host() -> Path | None:
    """The control socket of the host running in this process, if it is a host: a pod it
    serves loads its ``task`` children into it."""
    return _serving[-1].control_path if _serving else None


def set_serving_host(host: Host | None) -> None:
    """Say that this process is now ``host`` (None: no more)."""
    _serving.clear()
    if host is not None:
        _serving.append(host)


def hidden_from_pods() -> tuple[Path, ...]:
    """What the sandboxes of the pods this process hosts must not see: its control socket and
    the folder holding it, the sockets of the pods it serves now, and the host's
    :attr:`Host.hidden_from_pods` (a fleet's root). Empty in a process that is no host."""
    if not _serving:
        return ()
    host = _serving[-1]
    control = host.control_path
    sockets = (slot.socket_path for slot in host.slots.values())
    return (control, control.parent, *sockets, *host.hidden_from_pods)


def control_socket() -> Path:
    """Where the host of this user listens for control requests."""
    return runtime_dir() / "host.sock"


def registry_file() -> Path:
    """Where the host keeps the pods it serves, so a restarted host binds them again."""
    return runtime_dir() / "host.registry"


@dataclass(eq=False)
class Host:
    """The pods of one host process, and its control socket."""

    idle_unload_s: float = IDLE_UNLOAD_S
    max_loaded: int | None = None
    control_path: Path = field(default_factory=control_socket)
    registry_path: Path = field(default_factory=registry_file)
    slots: dict[str, PodSlot] = field(default_factory=dict)
    stopped: asyncio.Event = field(default_factory=asyncio.Event)
    exit_when_empty: bool = False
    """Stop once the last pod was shut down (a host the CLI started for its pods)."""
    baseline_rss_bytes: int | None = None
    """The process's RSS before it loaded any pod (:meth:`start`)."""
    hidden_from_pods: tuple[Path, ...] = ()
    """More paths the sandboxes of this host's pods hide (:func:`hidden_from_pods`): a fleet
    host's fleet root, with its gateways' sockets."""
    on_forget: Callable[[str], None] | None = None
    """Told the name of a pod a client shut down (the host forgot it): a fleet host drops it
    from the fleet's directory."""
    _control: asyncio.Server | None = None
    _sweeper: asyncio.Task[None] | None = None
    _release: asyncio.TimerHandle | None = None
    _connections: dict[asyncio.StreamWriter, asyncio.Task[Any]] = field(default_factory=dict)
    """Open control connections (``pod acp``'s among them) and the tasks serving them."""

    def _release_soon(self) -> None:
        """Free what evicted pods held, once for a burst of evictions: a second after the
        first of them (:func:`release_unloaded`). Never postponed by later ones: a host at its
        cap evicts on every load, and what it evicted must not pile up meanwhile."""
        if self._release is not None:
            return

        def release() -> None:
            self._release = None
            release_unloaded()

        self._release = asyncio.get_running_loop().call_later(RELEASE_AFTER_S, release)

    async def start(self) -> None:
        """Listen for control requests and bind the sockets of the pods a previous host of
        this user served (they load, from their sessions, when a client connects)."""
        prepare_process()
        baseline = process_memory()
        self.baseline_rss_bytes = baseline.rss_bytes if baseline is not None else None
        control = bind_socket(self.control_path)  # first: a second host is refused here
        for entry in self._read_registry():
            try:
                config = PodConfig.from_portable(entry["config"])
                await self.register(config, Path(entry["socket"]), continue_=True, save=False)
            except Exception as exc:  # one bad entry must not keep the others down
                log.warning("could not serve %s again: %s", entry.get("socket"), exc)
        self._save_registry()
        # Only now answered: a client that finds the host up finds every pod of it too.
        # A list of a thousand pods, or a configuration with many MCP servers, is one line.
        self._control = await asyncio.start_unix_server(
            self._serve_control, sock=control, limit=MAX_LINE_BYTES
        )
        self._sweeper = asyncio.create_task(self._sweep())
        set_serving_host(self)

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
        """No more control requests, no more idle sweeps."""
        if serving_host() == self.control_path:
            set_serving_host(None)
        if self._sweeper is not None:
            self._sweeper.cancel()
        if self._control is not None:
            self._control.close()
            with contextlib.suppress(OSError):
                self.control_path.unlink()

    async def close(self) -> None:
        """Shut down every pod and stop listening."""
        self._stop_listening()
        slots = list(self.slots.values())
        await asyncio.gather(*(slot.shutdown() for slot in slots), return_exceptions=True)
        self.slots.clear()
        await self._end_connections()
        with contextlib.suppress(OSError):
            self.registry_path.unlink()
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

    # -- pods --------------------------------------------------------------------------------

    async def register(
        self,
        config: PodConfig,
        socket: Path | None,
        *,
        continue_: bool,
        save: bool = True,
        owned: bool = False,
    ) -> PodSlot:
        """Serve a pod on its socket (it loads at the first connection)."""
        name = config.pod_name()
        if name in self.slots:
            raise HostError(f"this host already serves a pod named {name}")
        slot = PodSlot(
            config=config,
            socket_path=socket or config.socket or default_socket(name),
            continue_=continue_,
            on_stopped=self._forget,
            owned=owned,
        )
        await slot.bind()
        self.slots[name] = slot
        if save:
            self._save_registry()
        return slot

    async def load(
        self, config: PodConfig, socket: Path | None, *, continue_: bool, owned: bool = False
    ) -> PodSlot:
        """Register the pod if it is new, and load it now."""
        slot = self.slots.get(config.pod_name())
        new = slot is None
        if slot is None:
            slot = await self.register(config, socket, continue_=continue_, owned=owned)
        elif owned:
            raise HostError(f"this host already serves a pod named {slot.name}")
        try:
            await slot.load()
        except BaseException:
            if new:  # a pod that cannot load is not kept half-registered
                await slot.unbind()
                self.slots.pop(slot.name, None)
                self._save_registry()
            raise
        self._save_registry()  # the session is known now
        await self._enforce_cap(keep=slot)
        return slot

    async def evict(self, name: str) -> None:
        """Unload a pod now; :class:`HostError` with the reasons when it may not be."""
        slot = self.slots.get(name)
        if slot is None:
            raise HostError(f"this host serves no pod named {name}")
        try:
            await slot.evict()
        except EvictRefused as exc:
            raise HostError(str(exc)) from None
        self._release_soon()

    async def shut_down(self, slots: list[PodSlot]) -> list[str]:
        """Shut these pods down (those still served), each as ``pod serve`` on SIGTERM, and
        forget them; their names."""
        mine = [slot for slot in slots if self.slots.get(slot.name) is slot]
        await asyncio.gather(*(slot.shutdown() for slot in mine), return_exceptions=True)
        for slot in mine:
            self._forget(slot)  # an unloaded one has no pod to say it stopped
        return [slot.name for slot in mine]

    def rows(self) -> list[PodRow]:
        """One row per pod, loaded or not (without memory shares: :meth:`listing`)."""
        now_ms, now = time.time() * 1000, time.monotonic()
        rows = []
        for slot in self.slots.values():
            served = slot.served
            rows.append(
                PodRow(
                    name=slot.name,
                    workspace=str(slot.config.workspace),
                    socket=str(slot.socket_path),
                    session=str(slot.config.session) if slot.config.session else None,
                    loaded=served is not None,
                    state=served.controller.state_id if served is not None else "unloaded",
                    parent=slot.config.subpods.parent or None,
                    clients=slot.clients,
                    last_active_ms=int(now_ms - (now - slot.last_active) * 1000),
                )
            )
        return rows

    def listing(self) -> HostListing:
        """The host's memory and a row per pod, each loaded one with its estimated share of
        what the host grew by since it started (``orchestrator/host/memory.py``)."""
        rows = self.rows()
        memory = process_memory()
        if memory is not None and self.baseline_rss_bytes is not None:
            weights = {
                slot.name: _file_size(slot.served.pod.session_path)
                for slot in self.slots.values()
                if slot.served is not None
            }
            shares = split_shares(memory.rss_bytes - self.baseline_rss_bytes, weights)
            rows = [
                row.model_copy(update={"rss_share_bytes": shares.get(row.name)}) for row in rows
            ]
        stats = HostStats(
            pid=os.getpid(),
            rss_bytes=memory.rss_bytes if memory is not None else None,
            pss_bytes=memory.pss_bytes if memory is not None else None,
            baseline_rss_bytes=self.baseline_rss_bytes,
            loaded=sum(row.loaded for row in rows),
            registered=len(rows),
        )
        return HostListing(host=stats, pods=rows)

    def _forget(self, slot: PodSlot) -> None:
        if self.slots.get(slot.name) is slot:
            del self.slots[slot.name]
            self._save_registry()
            if self.on_forget is not None:
                self.on_forget(slot.name)
            if self.exit_when_empty and not self.slots:
                self.stopped.set()

    async def _sweep(self) -> None:
        """Unload pods idle for ``idle_unload_s``, checked every second."""
        while True:
            await asyncio.sleep(SWEEP_EVERY_S)
            for slot in list(self.slots.values()):
                if slot.loaded and slot.idle_for() >= self.idle_unload_s:
                    with contextlib.suppress(EvictRefused):
                        await slot.evict()
                        log.info("unloaded idle pod %s", slot.name)
                        self._release_soon()

    async def _enforce_cap(self, keep: PodSlot) -> None:
        """Over ``max_loaded``: unload the least recently used pods that may be unloaded."""
        if self.max_loaded is None:
            return
        loaded = sorted(
            (s for s in self.slots.values() if s.loaded and s is not keep),
            key=lambda s: s.last_active,
        )
        excess = len(loaded) + 1 - self.max_loaded
        for slot in loaded:
            if excess <= 0:
                break
            try:
                await slot.evict()
                excess -= 1
            except EvictRefused:
                continue
        self._release_soon()

    # -- the registry file -------------------------------------------------------------------

    def _save_registry(self) -> None:
        entries = [
            {"socket": str(s.socket_path), "config": s.config.portable()}
            for s in self.slots.values()
            if not s.owned
        ]
        tmp = self.registry_path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as file:
            json.dump(entries, file)
        os.replace(tmp, self.registry_path)

    def _read_registry(self) -> list[dict[str, Any]]:
        try:
            entries = json.loads(self.registry_path.read_text())
        except (OSError, ValueError):
            return []
        return [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []

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
        params = LoadParams.model_validate(request.params)
        config = PodConfig.from_portable(params.config)
        socket = Path(params.socket) if params.socket else None
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


def _file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


async def run_host(host: Host) -> None:
    """Start the host, serve until a signal or ``stop``, then shut every pod down."""
    await host.start()
    host.install_signals()
    await host.serve_forever()
