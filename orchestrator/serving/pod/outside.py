"""What a served pod sets up around it, outside its own process: the supervision of its
commands, its sandbox (and the check on what sandboxed commands plant), and its MCP servers.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.adapters.procs import Ledger, sweep, sweep_ledgers
from orchestrator.adapters.sandbox.plant_guard import KeepAnswer, PlantGuard
from orchestrator.adapters.sandbox.quarantine import HoldingArea, recover
from orchestrator.adapters.sandbox.sandboxing import Sandboxing, open_sandboxing
from orchestrator.capabilities.jobs import Job
from orchestrator.capabilities.permissions import pod_policy
from orchestrator.capabilities.tools.base import tool_kind
from orchestrator.capabilities.tools.bash import BashTool
from orchestrator.config.model import PodConfig
from orchestrator.config.paths import held_dir, pod_info_path, runtime_dir
from orchestrator.errors import SetupError
from orchestrator.protocol import ApprovalRequestData
from orchestrator.runtime.controller import Controller

if TYPE_CHECKING:
    from orchestrator.adapters.mcp.servers import McpServer, McpServers

__all__ = [
    "open_sandbox",
    "recover_held",
    "served_sockets",
    "start_mcp_servers",
    "supervise_commands",
]

log = logging.getLogger(__name__)


def supervise_commands(controller: Controller) -> Ledger | None:
    """Give ``bash`` a ledger for its supervisors' records, and end what the commands of a
    killed pod left running unsupervised (found in its ledger or cgroups), saying so."""
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


def served_sockets(
    socket_path: Path, *, parent: Path | None = None, hidden: Sequence[Path] = ()
) -> tuple[Path, ...]:
    """What a pod's sandbox hides besides its defaults: the pod's socket and info file, its
    parent pod's socket (a child's), and ``hidden``: what the host serving it names (its
    control socket and folder, the sockets of its other pods, a fleet's root:
    :meth:`orchestrator.serving.host.Host.hidden_paths`)."""
    mine = (socket_path, pod_info_path(socket_path), *([parent] if parent else []))
    return (*mine, *hidden)


async def open_sandbox(
    controller: Controller, config: PodConfig, sockets: Sequence[Path] = ()
) -> Sandboxing | None:
    """The pod's sandbox where something runs in it (``bash`` unless ``[sandbox] mode`` is
    off, an MCP server with ``sandbox = true``), and ``bash`` set up for it: sandboxed, or
    (``auto``) unsandboxed with one alert, or (``on``) refusing to run. ``sockets``: hidden
    from it (:func:`served_sockets`)."""
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


def recover_held(controller: Controller, config: PodConfig) -> None:
    """What a pod that died mid-hold left held: the workspace's previous state is put back
    where it is not, and the user told."""
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
    # Imported here on purpose: the MCP SDK takes about a second to import, and only a pod
    # with MCP servers configured should pay for it (a start-up cost, not a layering one).
    from orchestrator.adapters.mcp.client_side import settings_of
    from orchestrator.adapters.mcp.elicitation import PodAsker
    from orchestrator.adapters.mcp.resources import ReadMcpResource
    from orchestrator.adapters.mcp.sampling import PodSampler
    from orchestrator.adapters.mcp.servers import McpServers, McpTool
    from orchestrator.serving.pod.mcp_commands import offer_prompts

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
        server.on_prompts_changed = lambda changed: offer_prompts(controller, changed)
        offer_prompts(controller, server)  # listed as it started
        server.sampler = sampler
        server.asker = asker
        offer(server)
    reader = ReadMcpResource(servers)
    if any(s.has_resources for s in servers.servers) and policy.offered(reader.name, "read"):
        registry.register(reader)
    return servers
