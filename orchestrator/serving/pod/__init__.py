"""Assembling and serving one pod: config → file system, tools, provider, session, controller.

``serve_pod`` is what ``pod serve`` runs: it builds everything, listens on the socket, and
returns when the pod is shut down (by the ``shutdown`` method or SIGTERM/SIGINT).
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
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.adapters.providers.base import AlertCallback, Provider, ProviderConfigError
from orchestrator.adapters.scoped_fs import ScopedFS
from orchestrator.adapters.session import (
    Fence,
    GrantRecord,
    LoadedSession,
    PreparedHistory,
    SessionWriteError,
    SessionWriter,
    ToolSpools,
    encoded_items,
    latest_session,
    load_session,
    new_session_path,
    session_write_pool,
)
from orchestrator.capabilities.hooks import CommandHooks, HookContext, HookRunner
from orchestrator.capabilities.hooks.chain import InterceptorChain
from orchestrator.capabilities.jobs import Job, Jobs, JobSpools
from orchestrator.capabilities.permissions import pod_policy
from orchestrator.capabilities.permissions.approvals import Approvals
from orchestrator.capabilities.tools.base import ClosableTool, Tool
from orchestrator.capabilities.tools.knowledge import KnowledgeSearchTool, MemoryReadTool
from orchestrator.capabilities.tools.registry import default_registry
from orchestrator.config.model import PodConfig
from orchestrator.config.paths import pod_info_path
from orchestrator.core.history import History, Item, ToolResult
from orchestrator.core.redaction import Redactor, secret_values
from orchestrator.core.repair import (
    CrashedCall,
    close_crashed_calls,
    close_denied_calls,
    repair_loaded,
)
from orchestrator.errors import SetupError
from orchestrator.protocol import ApprovalRequestData, ToolOutputDeltaData
from orchestrator.runtime.checkpointing import Checkpointer, finish_rewind
from orchestrator.runtime.context import Context
from orchestrator.runtime.controller import Controller
from orchestrator.runtime.methods import Methods
from orchestrator.runtime.system_prompt import build_system_prompt
from orchestrator.runtime.tool_runner import ToolRunner
from orchestrator.runtime.transcript import Transcript
from orchestrator.serving.server import PodServer

if TYPE_CHECKING:
    from orchestrator.adapters.mcp.servers import McpServer, McpServers
    from orchestrator.adapters.procs import Ledger
    from orchestrator.adapters.sandbox.plant_guard import PlantGuard
    from orchestrator.adapters.sandbox.sandboxing import Sandboxing

log = logging.getLogger(__name__)


class PodSetupError(SetupError):
    """The pod cannot start; the message says what to change."""


def make_provider(config: PodConfig, *, on_alert: AlertCallback | None = None) -> Provider:
    """The configured provider; ``scripted`` when no API key is set and none was chosen."""
    kind = config.resolved_provider()
    if kind == "scripted":
        from orchestrator.adapters.providers.scripted import ScriptedProvider

        scripted = (
            ScriptedProvider.from_file(config.scripted_script)
            if config.scripted_script is not None
            else ScriptedProvider()
        )
        scripted.on_alert = on_alert
        if config.context_window is not None:
            scripted.window = config.context_window  # the offline model's window is ours to set
        return scripted
    from orchestrator.adapters.providers.anthropic import AnthropicProvider

    if not os.environ.get("ANTHROPIC_API_KEY"):
        raise PodSetupError(
            "--provider anthropic needs ANTHROPIC_API_KEY (or drop the option to run offline)"
        )
    try:
        return AnthropicProvider(
            model=config.model,
            max_retries=config.provider_max_retries,
            timeout_s=config.provider_timeout_s,
            on_alert=on_alert,
        )
    except ProviderConfigError as exc:
        raise PodSetupError(str(exc)) from None


@dataclass
class Pod:
    """A built pod: its controller, the methods clients call, and where its session lives."""

    controller: Controller
    methods: Methods
    session_path: Path
    loaded: LoadedSession | None


def open_session(config: PodConfig, *, continue_: bool) -> tuple[Path, LoadedSession | None]:
    """The session file to use and, when continuing, what it holds.

    Continuing picks the latest session that holds a conversation: a pod that was started
    and stopped without one leaves an empty file, which must not hide the real one.
    """
    path = config.session
    if path is None and continue_:
        path = latest_session(config.workspace, with_content=True)
    if path is not None and path.exists() and (continue_ or config.session is not None):
        return path, load_session(path)
    return path or new_session_path(config.workspace), None


async def open_session_async(
    config: PodConfig, *, continue_: bool
) -> tuple[Path, LoadedSession | None]:
    """:func:`open_session` on a worker thread, so the event loop serves other pods while a
    long session file is read, parsed and its history made ready (:func:`prepare_history`);
    pass the result to :func:`build_pod` (``opened``), which then only wires the pod."""
    return await asyncio.to_thread(_open_prepared, config, continue_)


def _open_prepared(config: PodConfig, continue_: bool) -> tuple[Path, LoadedSession | None]:
    path, loaded = open_session(config, continue_=continue_)
    # A cut-short rewind changes the items first, and only the pod's build can finish it.
    if loaded is not None and loaded.pending_rewind is None:
        loaded.prepared = prepare_history(loaded)
    return path, loaded


def prepare_history(loaded: LoadedSession) -> PreparedHistory:
    """The loaded items repaired (``repair_loaded``), in a history numbered on from the file,
    each with its JSON text. Pure and touching nothing shared: it may run on a worker thread.
    """
    repair = repair_loaded(loaded.items, turn_closed=not loaded.cut_off)
    return PreparedHistory(
        source=loaded.items,
        history=History(repair.items, next_seq=loaded.next_seq, turn=loaded.last_turn),
        texts=encoded_items(repair.items, loaded),
        notes=repair.notes,
    )


def build_pod(
    config: PodConfig,
    *,
    broadcast: Callable[[bytes], None],
    provider: Provider | None = None,
    continue_: bool = False,
    interceptors: InterceptorChain | None = None,
    upward: Callable[[str, str], None] | None = None,
    holder: dict[str, str] | None = None,
    on_stopped: Callable[[], None] | None = None,
    opened: tuple[Path, LoadedSession | None] | None = None,
    fence: Fence | None = None,
) -> Pod:
    """Build every part of a pod around a broadcast function, each once, in dependency order.

    ``holder`` describes this pod in the session's lock file (e.g. its socket), so a second
    pod on the same session is told who holds it. ``opened``: what :func:`open_session` (or
    :func:`open_session_async`) returned for this config, so the file is not read twice.
    ``fence``: a fleet pod's ownership epoch, checked and stamped on every session record.
    """
    fs = ScopedFS(config.workspace, read_roots=config.read_roots, write_roots=config.write_roots)
    session_path, loaded = (
        opened if opened is not None else open_session(config, continue_=continue_)
    )
    alerts: list[tuple[str, str]] = [("warn", warning) for warning in config.load_warnings]
    # The transcript comes first: everything after it reports through it.
    session = SessionWriter(
        session_path,
        pod=config.pod_name(),
        workspace=config.workspace,
        holder=holder,
        fence=fence,
    )
    prepared = PreparedHistory(source=[], history=History(), texts=[], notes=[])
    if loaded is not None:
        alerts.extend(("warn", warning) for warning in loaded.warnings)
        if loaded.pending_rewind is not None:
            alerts.append(finish_rewind(loaded, session, config, session_path))
        ahead, loaded.prepared = loaded.prepared, None
        prepared = ahead if ahead and ahead.source is loaded.items else prepare_history(loaded)
        alerts.extend(("warn", f"{session_path.name}: {note}") for note in prepared.notes)
    redactor = Redactor(secret_values(os.environ, config.mcp.servers))
    transcript = Transcript(
        history=prepared.history,
        session=session,
        broadcast=broadcast,
        clean_result=redactor.result,
        item_json=prepared.texts,
    )
    spools = ToolSpools(session_path)
    if loaded is not None:
        for result in crash_results(loaded, transcript.history.items, spools, config):
            transcript.commit(result)
        for result in close_denied_calls(transcript.history.items, loaded.hook_denials):
            transcript.commit(result)
        if transcript.durable:
            spools.clear()
    jobs = _background_jobs(config, session_path, transcript, redactor, loaded)

    def provider_alert(level: str, message: str) -> None:
        transcript.alert(level, "provider", message)

    if provider is None:
        provider = make_provider(config, on_alert=provider_alert)
    elif provider.on_alert is None:
        provider.on_alert = provider_alert  # a provider built by the caller (tests, benches)
    extra: list[Tool] = []
    if config.memory.enabled:
        extra = [KnowledgeSearchTool(config.memory_root()), MemoryReadTool(config.memory_root())]
    children = None
    if config.subpods.enabled and config.subpods.depth < config.subpods.max_depth:
        from orchestrator.capabilities.subpods.children import Children
        from orchestrator.capabilities.subpods.task_tool import TaskTool

        children = Children(
            config=config,
            session_path=session_path,
            records=dict(loaded.children) if loaded is not None else {},
        )
        extra.append(TaskTool(config, children))
    prompt = build_system_prompt(config, fs)
    alerts.extend(("warn", warning) for warning in prompt.warnings)
    chain = interceptors or InterceptorChain()
    if config.hooks.configured():
        chain.commands = command_hooks(config, session_path, transcript)
    policy = pod_policy(config)
    for grant in loaded.grants if loaded is not None else []:
        policy.grant(grant.tool, grant.arguments())
    approvals = Approvals(
        policy=policy,
        emit=transcript.emit,
        on_request=lambda request: chain.notification(
            f"pod needs your permission to use {request.tool}", "permission_prompt"
        ),
        on_grant=lambda rule, call_id: transcript.keep(
            GrantRecord(
                tool=rule.tool,
                command=rule.subject,
                call_id=call_id,
                at_ms=int(time.time() * 1000),
            )
        ),
    )
    runner = ToolRunner(
        registry=default_registry(config, extra=extra, jobs=jobs),
        fs=fs,
        workspace=config.workspace,
        scratch_dir=config.workspace / ".pod" / "scratch",
        cap_for=config.content_cap,
        interceptors=chain,
        journal=transcript,
        spools=spools,
        on_output=lambda call_id, text: transcript.emit(
            "tool_output_delta", ToolOutputDeltaData(id=call_id, text=redactor.redact(text)[0])
        ),
        redactor=redactor,
        policy=policy,
        approvals=approvals,
    )
    controller = Controller(
        config=config,
        provider=provider,
        tools=runner,
        fs=fs,
        transcript=transcript,
        system_prompt=prompt.text,
        context=Context(
            config=config,
            history=transcript.history,
            prune_bound=loaded.prune_before_turn if loaded is not None else 0,
        ),
        approvals=approvals,
        start_paused=bool(loaded and loaded.cut_off),
        held_prompt=loaded.held_prompt if loaded is not None else None,
        interceptors=chain,
        upward=upward,
        on_stopped=on_stopped,
        jobs=jobs,
        checkpoints=Checkpointer(
            config=config,
            session_path=session_path,
            records=list(loaded.checkpoints) if loaded is not None else [],
            record=transcript.record,
            alert=transcript.alert,
        )
        if config.checkpoints
        else None,
    )
    if loaded is not None:
        controller.count_spent(loaded.spends)
    controller.elicitations.on_request = lambda request: chain.notification(
        f"MCP server {request.server} needs your input: {request.message}"[:500],
        "elicitation_dialog",
    )
    if children is not None:
        from orchestrator.capabilities.subpods.children import ParentLinks

        children.links = ParentLinks(
            record=transcript.persist,
            emit=transcript.emit,
            alert=transcript.alert,
            approvals=approvals,
            elicitations=controller.elicitations,
            signal=controller.signal,
            offered=runner.registry.names,
        )
        controller.subpods = children
        controller.board.children = children
    if loaded is not None and loaded.unloaded is not None:
        controller.restore(loaded.unloaded)
    for level, message in alerts:
        transcript.alert(level, "pod", message)
    return Pod(
        controller=controller,
        methods=Methods(controller),
        session_path=session_path,
        loaded=loaded,
    )


def _background_jobs(
    config: PodConfig,
    session_path: Path,
    transcript: Transcript,
    redactor: Redactor,
    loaded: LoadedSession | None,
) -> Jobs:
    """The pod's background jobs, recording in its session; jobs a crash of the last run ended
    are reported (an alert now, a note for the model at the next round boundary)."""
    jobs = Jobs(
        limits=config.jobs,
        spools=JobSpools(session_path),
        journal=transcript,
        alert=lambda level, message: transcript.alert(level, "jobs", message),
        redact=lambda text: redactor.redact(text)[0],
    )
    jobs.recover(
        loaded.jobs if loaded is not None else [],
        last_write_ms=loaded.last_write_ms if loaded is not None else 0,
    )
    return jobs


def command_hooks(config: PodConfig, session_path: Path, transcript: Transcript) -> CommandHooks:
    """The user's ``[hooks]`` commands for this pod, recording what they decide."""
    from orchestrator.capabilities.tools.environment import network_settings, tool_environment
    from orchestrator.config.paths import user_config_file

    env = tool_environment(os.environ, allow=config.tool_env_allow, fixed=config.tool_env)
    workspace = str(config.workspace)
    # Claude Code's name for the project folder, so its users' scripts find it unchanged.
    env |= {"CLAUDE_PROJECT_DIR": workspace, "POD_PROJECT_DIR": workspace}
    if "XDG_CONFIG_HOME" in os.environ:
        # So a hook command naming ``${XDG_CONFIG_HOME:-$HOME/.config}/pod/hooks/…`` finds the
        # user's hooks folder where the pod found the config (docs/hooks.md).
        env["XDG_CONFIG_HOME"] = os.environ["XDG_CONFIG_HOME"]
    runner = HookRunner(
        workspace=config.workspace,
        env=env,
        hooks_dir=user_config_file().parent / "hooks",
        outside_env=network_settings(os.environ),
    )
    # The workspace files ``sandbox = false`` hooks run, as they are now: a version written
    # later (by a sandboxed command, say) is refused, never run outside the sandbox.
    runner.pin(hook for _, _, hook in config.hooks.configured())
    return CommandHooks(
        config=config.hooks,
        runner=runner,
        context=HookContext(
            session_id=session_path.stem,
            transcript_path=session_path,
            cwd=config.workspace,
            permission_mode=config.permissions.mode,
        ),
        record=transcript.persist,
        keep=transcript.keep,
        alert=lambda level, message: transcript.alert(level, "hooks", message),
    )


def crash_results(
    loaded: LoadedSession, items: list[Item], spools: ToolSpools, config: PodConfig
) -> list[ToolResult]:
    """Results for calls the pod was running when it died, with what they printed.

    Once these are committed, no call of the session is running, so every spool is spent.
    """
    crashed: dict[str, CrashedCall] = {}
    answered = {item.call_id for item in items if isinstance(item, ToolResult)}
    for call_id, record in loaded.started_calls.items():
        if call_id in answered:
            continue
        output = (
            spools.read(record.spool, config.content_cap(record.name)) if record.spool else None
        )
        last_alive = loaded.last_write_ms
        if record.spool:
            last_alive = max(last_alive, spools.mtime_ms(record.spool))
        crashed[call_id] = CrashedCall(
            call_id=call_id,
            name=record.name,
            ran_for_s=max(0, last_alive - record.started_ms) / 1000,
            output=output[0] if output else None,
            output_bytes=output[1] if output else 0,
        )
    return close_crashed_calls(items, crashed, max_bytes=config.tool_output_max_bytes)


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


class UpwardReporter:
    """Reports this pod's turn ends, worker errors and shutdown to a parent pod."""

    def __init__(self, parent_socket: Path, name: str) -> None:
        self.parent_socket = parent_socket
        self.name = name
        self._tasks: set[asyncio.Task[None]] = set()

    def __call__(self, kind: str, message: str) -> None:
        """Send one ``pod_event`` to the parent without blocking the pod."""
        task = asyncio.get_running_loop().create_task(self._send(kind, message))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _send(self, kind: str, message: str) -> None:
        line = json.dumps(
            {"method": "pod_event", "params": {"kind": kind, "pod": self.name, "message": message}}
        )
        try:
            _, writer = await asyncio.wait_for(
                asyncio.open_unix_connection(str(self.parent_socket)), timeout=2.0
            )
            writer.write(line.encode() + b"\n")
            await writer.drain()
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
        except (OSError, TimeoutError) as exc:
            log.warning("could not report %s to parent %s: %s", kind, self.parent_socket, exc)

    async def flush(self) -> None:
        """Wait for reports in flight (before the process exits)."""
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=2.0)


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
            from orchestrator.runtime.unload import UnloadBlocked, unload_session

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
) -> ServedPod:
    """Build the pod and start serving it on ``socket_path``.

    ``listen=False`` (a host): the socket is someone else's, who hands connections over with
    ``server.serve_connection``. ``fence``: a fleet pod's ownership epoch (:func:`build_pod`).
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
    )
    controller = pod.controller
    ledger = _supervise_commands(controller)
    _recover_held(controller, config)
    try:
        sockets = served_sockets(socket_path, parent=config.parent_socket)
        sandboxing = await _open_sandbox(controller, config, sockets)
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
            loop.add_signal_handler(
                sig, lambda: served.pod.methods.handle("shutdown", None, None, _drop)
            )
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


def _supervise_commands(controller: Controller) -> Ledger | None:
    """Give ``bash`` a ledger for its supervisors' records, and end what the commands of a
    killed pod left running unsupervised (found in its ledger or cgroups), saying so."""
    from orchestrator.adapters.procs import Ledger, sweep, sweep_ledgers
    from orchestrator.capabilities.tools.bash import BashTool
    from orchestrator.config.paths import runtime_dir

    ledger = None
    try:
        root = runtime_dir() / "procs"
        ended = {s.pid: s for s in [*sweep_ledgers(root), *sweep()]}
        ledger = Ledger.open(root, controller.config.pod_name())
    except (OSError, SetupError) as exc:
        log.warning("no ledger for command supervisors: %s", exc)
        ended = {s.pid: s for s in sweep()}
    bash = controller.tools.registry.get("bash")
    if isinstance(bash, BashTool):
        bash.ledger = ledger
    if ended:
        listed = sorted(ended.values(), key=lambda s: s.pid)
        names = ", ".join(f"{s.pid} ({s.command or '?'})" for s in listed[:5])
        more = f" and {len(listed) - 5} more" if len(listed) > 5 else ""
        controller.alert(
            "warn",
            "procs",
            f"ended {len(listed)} processes that a stopped pod's commands left running: "
            f"{names}{more}",
        )
    return ledger


def served_sockets(socket_path: Path, *, parent: Path | None = None) -> tuple[Path, ...]:
    """What a pod's sandbox hides besides its defaults: the pod's socket and info file, its
    parent pod's socket (a child's), and where a host serves it, the host's control socket
    and folder, the sockets of its other pods, and a fleet's root
    (:func:`orchestrator.serving.host.host.hidden_from_pods`)."""
    from orchestrator.serving.host.host import hidden_from_pods

    mine = (socket_path, pod_info_path(socket_path), *([parent] if parent else []))
    return (*mine, *hidden_from_pods())


async def _open_sandbox(
    controller: Controller, config: PodConfig, sockets: Sequence[Path] = ()
) -> Sandboxing | None:
    """The pod's sandbox where something runs in it (``bash`` unless ``[sandbox] mode`` is
    off, an MCP server with ``sandbox = true``), and ``bash`` set up for it: sandboxed, or
    (``auto``) unsandboxed with one alert, or (``on``) refusing to run. ``sockets``: hidden
    from it (:func:`served_sockets`)."""
    from orchestrator.adapters.sandbox.sandboxing import open_sandboxing
    from orchestrator.capabilities.tools.bash import BashTool

    bash = controller.tools.registry.get("bash")
    hooks = controller.interceptors.commands
    for_bash = isinstance(bash, BashTool) and config.sandbox.mode != "off"
    for_hooks = hooks is not None and config.sandbox.mode != "off"
    if not (for_bash or for_hooks or config.mcp.sandboxed()):
        return None
    sandboxing = await open_sandboxing(config, extra_hidden=sockets)
    # A hidden path the sandbox could not hide (a symlink leading nowhere), said once.
    sandboxing.problems.attach(lambda message: controller.alert("warn", "sandbox", message))
    if for_hooks and hooks is not None and (sandboxing.bwrap or config.sandbox.mode == "on"):
        # Hooks run where commands run (a hook is a command too), or refuse as they would.
        hooks.runner.sandboxing = sandboxing
    if not isinstance(bash, BashTool) or not for_bash:
        return sandboxing
    if sandboxing.bwrap is None:
        why = sandboxing.unavailable
        if config.sandbox.mode == "on":
            bash.sandboxing = sandboxing  # which refuses every command, saying why
            controller.alert("error", "sandbox", f"commands will not run: {why}")
        else:
            controller.alert(
                "warn", "sandbox", f"commands run without a sandbox: {why} ([sandbox] mode)"
            )
        return sandboxing
    bash.sandboxing = sandboxing
    bash.planting = guard = _plant_guard(controller, config)
    if guard is not None and bash.jobs is not None:

        def job_ended(job: Job) -> None:
            note = guard.undo_since_last()
            if note is not None:
                controller.alert("warn", "sandbox", f"job {job.id}: {note.strip('[]')}")

        bash.jobs.on_ended = job_ended
    if controller.tools.policy is not None:
        controller.tools.policy.sandboxed = True
    return sandboxing


def _plant_guard(controller: Controller, config: PodConfig) -> PlantGuard | None:
    """The check after each sandboxed command: what it planted among the protected paths is
    held, and the user asked through the pod's approvals whether to keep it."""
    from orchestrator.adapters.sandbox.plant_guard import KeepAnswer, PlantGuard
    from orchestrator.adapters.sandbox.quarantine import HoldingArea
    from orchestrator.config.paths import held_dir

    try:
        area = HoldingArea(held_dir(config.workspace))
    except OSError as exc:
        controller.alert(
            "error",
            "sandbox",
            f"what commands plant in .git, .pod and other protected paths is not checked: "
            f"cannot make the holding folder ({exc.strerror}: {exc.filename})",
        )
        return None

    async def ask(request: ApprovalRequestData) -> KeepAnswer:
        answer = await controller.approvals.relay(request, signal=controller.signal)
        return KeepAnswer(keep=answer.allow, asked=answer.asked, message=answer.message)

    return PlantGuard(config.workspace, area, ask)


def _recover_held(controller: Controller, config: PodConfig) -> None:
    """What a pod that died mid-hold left held: the workspace's previous state is put back
    where it is not, and the user told."""
    from orchestrator.adapters.sandbox.quarantine import recover
    from orchestrator.config.paths import held_dir

    root = held_dir(config.workspace)
    if not root.is_dir():
        return
    for message in recover(config.workspace, root):
        controller.alert("warn", "sandbox", message)


async def start_mcp_servers(
    config: PodConfig, controller: Controller, sandboxing: Sandboxing | None = None
) -> McpServers | None:
    """Start the configured MCP servers and offer their tools; None when there are none.

    A server that fails is an alert naming it (with its stderr's last lines); the pod runs
    with the rest. Tools the permissions deny outright are not offered, as for built-ins.
    """
    enabled = {n: s for n, s in config.mcp.servers.items() if s.enabled}
    if not enabled:
        return None
    from orchestrator.adapters.mcp.client_side import settings_of
    from orchestrator.adapters.mcp.elicitation import PodAsker
    from orchestrator.adapters.mcp.resources import ReadMcpResource
    from orchestrator.adapters.mcp.sampling import PodSampler
    from orchestrator.adapters.mcp.servers import McpServers, McpTool
    from orchestrator.capabilities.tools.base import tool_kind

    def alert(level: str, message: str) -> None:
        controller.alert(level, "mcp", message)

    registry = controller.tools.registry
    policy = pod_policy(config)
    servers = McpServers.from_config(
        config.mcp.servers, config.workspace, alert, sandboxing, settings_of(config)
    )
    controller.board.mcp = servers
    await servers.start()

    def offer(server: McpServer) -> None:
        # Called again when a server says its tools changed: the next request sees the new
        # list (a call in flight keeps the tool it started with).
        for tool in [t for t in registry if isinstance(t, McpTool) and t.server is server]:
            registry.unregister(tool.name)
        for tool in servers.tools(set(registry.names()), only=server):
            if policy.offered(tool.name, tool_kind(tool)):
                registry.register(tool)

    sampler = PodSampler(controller)
    asker = PodAsker(controller)
    for server in servers.servers:
        server.on_tools_changed = offer
        server.sampler = sampler
        server.asker = asker
        offer(server)
    reader = ReadMcpResource(servers)
    if any(s.has_resources for s in servers.servers) and policy.offered(reader.name, "read"):
        registry.register(reader)
    return servers


STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
"""Each shuts the pod down cleanly; SIGHUP too (a closed terminal), which would kill it
outright otherwise."""


def _drop(line: bytes) -> None:
    """Reply sink for methods the pod sends itself (signals)."""
