"""Building a pod from its configuration: file system, transcript, tools, provider, hooks,
approvals, sub-pods and the controller, each once, in dependency order.

What the pod starts outside its process (sandbox, MCP servers) is set up when it is served
(``serve.py`` and ``outside.py``); a built pod is enough for tests and benches.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from orchestrator.adapters.providers.base import (
    AlertCallback,
    NotesAtStart,
    Provider,
    ProviderConfigError,
    SwitchesModel,
)
from orchestrator.adapters.providers.scripted import ScriptedProvider
from orchestrator.adapters.scoped_fs import ScopedFS
from orchestrator.adapters.session import (
    Fence,
    GrantRecord,
    HeldPromptRecord,
    LoadedSession,
    ModeRecord,
    PreparedHistory,
    SessionWriter,
    ToolSpools,
)
from orchestrator.capabilities.hooks import CommandHooks, HookContext, HookRunner
from orchestrator.capabilities.hooks.chain import InterceptorChain
from orchestrator.capabilities.jobs import Jobs, JobSpools
from orchestrator.capabilities.permissions import pod_policy
from orchestrator.capabilities.permissions.approvals import Approvals
from orchestrator.capabilities.permissions.modes import ModeRefused, parse_mode
from orchestrator.capabilities.skills import pod_skills
from orchestrator.capabilities.subpods.agent_files import ModelFamilies, with_agent_files
from orchestrator.capabilities.subpods.children import Children
from orchestrator.capabilities.subpods.launcher import ChildLauncher
from orchestrator.capabilities.subpods.parent import ParentLinks
from orchestrator.capabilities.subpods.task_tool import TaskTool
from orchestrator.capabilities.tools.base import Tool
from orchestrator.capabilities.tools.environment import network_settings, tool_environment
from orchestrator.capabilities.tools.knowledge import KnowledgeSearchTool, MemoryReadTool
from orchestrator.capabilities.tools.registry import default_registry
from orchestrator.capabilities.tools.todos import TodoWriteTool
from orchestrator.config.model import PodConfig
from orchestrator.config.paths import user_config_file
from orchestrator.config.telemetry import telemetry_endpoint
from orchestrator.core.history import History
from orchestrator.core.redaction import Redactor, secret_values
from orchestrator.core.repair import close_denied_calls
from orchestrator.errors import SetupError
from orchestrator.protocol import ToolOutputDeltaData
from orchestrator.runtime.checkpointing import Checkpointer, finish_rewind
from orchestrator.runtime.context import Context
from orchestrator.runtime.controller import Controller
from orchestrator.runtime.custom_commands import never_started
from orchestrator.runtime.fallback import Fallback
from orchestrator.runtime.methods import Methods
from orchestrator.runtime.system_prompt import build_system_prompt
from orchestrator.runtime.todos import TodoBoard, close_recorded_todo_calls
from orchestrator.runtime.tool_runner import ToolRunner
from orchestrator.runtime.transcript import Transcript
from orchestrator.serving.pod.child_launch import launch_child_process
from orchestrator.serving.pod.session import crash_results, open_session, prepare_history

__all__ = ["Pod", "PodSetupError", "build_pod", "command_hooks", "make_provider"]


class PodSetupError(SetupError):
    """The pod cannot start; the message says what to change."""


def make_provider(config: PodConfig, *, on_alert: AlertCallback | None = None) -> Provider:
    """The configured provider; ``scripted`` when no API key is set and none was chosen."""
    kind = config.resolved_provider()
    if kind == "scripted":
        scripted = (
            ScriptedProvider.from_file(config.scripted_script)
            if config.scripted_script is not None
            else ScriptedProvider()
        )
        scripted.on_alert = on_alert
        if config.context_window is not None:
            scripted.window = config.context_window  # the offline model's window is ours to set
        return scripted
    # Imported here on purpose: the Anthropic SDK is the slowest import of a pod's start
    # (about 1.5 s), paid only by a pod that talks to the API (a start-up cost).
    if kind in ("bedrock", "vertex"):
        from orchestrator.adapters.providers.platforms import platform_provider

        try:
            return platform_provider(config, on_alert=on_alert)
        except ProviderConfigError as exc:
            raise PodSetupError(str(exc)) from None
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
    launcher: ChildLauncher | None = None,
) -> Pod:
    """Build every part of a pod around a broadcast function, each once, in dependency order.

    ``holder`` describes this pod in the session's lock file (e.g. its socket), so a second
    pod on the same session is told who holds it. ``opened``: what :func:`open_session` (or
    :func:`open_session_async`) returned for this config, so the file is not read twice.
    ``fence``: a fleet pod's ownership epoch, checked and stamped on every session record.
    ``launcher``: how its ``task`` children start (default: each a ``pod serve`` of its own;
    a host gives its own, :class:`orchestrator.serving.pod.serve.Hosting`).
    """
    # Agent files join [agents.*] (TOML wins): children are told of them as of any agent.
    config, agent_alerts = with_agent_files(config)
    skills = pod_skills(config)
    # A user's skill folders are read-only roots: the model reads a skill's files where
    # they are, and writes there are refused like anywhere outside (docs/skills.md).
    read_roots = [*config.read_roots, *skills.read_roots]
    fs = ScopedFS(config.workspace, read_roots=read_roots, write_roots=config.write_roots)
    session_path, loaded = (
        opened if opened is not None else open_session(config, continue_=continue_)
    )
    alerts: list[tuple[str, str]] = [("warn", warning) for warning in config.load_warnings]
    alerts.extend(("warn", alert) for alert in [*agent_alerts, *skills.alerts])
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
        for result in close_recorded_todo_calls(transcript.history.items, loaded.todos):
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
    if isinstance(provider, NotesAtStart) and (note := provider.start_note()):
        alerts.append(("warn", note))
    todos = TodoBoard(transcript, loaded.todos if loaded is not None else ())
    extra: list[Tool] = [TodoWriteTool(todos)]
    if config.memory.enabled:
        extra += [KnowledgeSearchTool(config.memory_root()), MemoryReadTool(config.memory_root())]
    if skills.tool is not None:
        extra.append(skills.tool)
    children, task = None, None
    if config.subpods.enabled and config.subpods.depth < config.subpods.max_depth:
        children = Children(
            config=config,
            session_path=session_path,
            records=dict(loaded.children) if loaded is not None else {},
            launcher=launcher or launch_child_process,
        )
        task = TaskTool(config, children)
        extra.append(task)
    prompt = build_system_prompt(config, fs, skills.listed)
    alerts.extend(("warn", warning) for warning in prompt.warnings)
    chain = interceptors or InterceptorChain()
    if config.hooks.configured():
        chain.commands = command_hooks(config, session_path, transcript)
    policy = pod_policy(config)
    if task is not None:
        task.live_mode = lambda: policy.mode
        task.resolve_model = ModelFamilies(getattr(provider, "listed_models", None)).resolve
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
        registry=default_registry(
            # Registered whenever fetch may resolve to local; requests offer it only then.
            config,
            extra=extra,
            jobs=jobs,
            web_fetch=config.web.fetch in ("auto", "local"),
        ),
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
    tracing = None
    endpoint = telemetry_endpoint(config.telemetry, os.environ)
    if endpoint is not None:
        # Imported here on purpose: only a pod whose user asked for telemetry imports it.
        from orchestrator.serving.pod.telemetry import trace_pod

        tracing = trace_pod(
            config,
            endpoint,
            provider=provider,
            transcript=transcript,
            runner=runner,
            chain=chain,
            session_path=session_path,
        )
        if tracing is not None:
            provider = tracing.provider
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
        held_prompt=_held_prompt(loaded),
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
    if tracing is not None:
        tracing.attach(controller)
    controller.todos = todos
    controller.compactor.open_todos = lambda: todos.current
    if loaded is not None:
        if loaded.budget is not None:
            controller.restore_budget(loaded.budget)
        controller.count_spent(loaded.spends)
        if controller.turn_is_open:
            # A turn a budget paused stays paused for the budget across a restart.
            controller.budget_reached()
    controller.elicitations.on_request = lambda request: chain.notification(
        f"MCP server {request.server} needs your input: {request.message}"[:500],
        "elicitation_dialog",
    )
    if children is not None:
        children.links = ParentLinks(
            record=transcript.persist,
            emit=transcript.emit,
            alert=transcript.alert,
            approvals=approvals,
            elicitations=controller.elicitations,
            signal=controller.signal,
            offered=runner.registry.names,
            budget=controller.child_budget,
            spent=controller.child_spent,
            budget_paused=controller.child_budget_paused,
        )
        controller.subpods = children
        controller.board.children = children
    if loaded is not None and loaded.mode is not None and controller.modes is not None:
        _restore_mode(controller, loaded.mode, alerts)
    controller.fallback = _fallback(config, provider, transcript, alerts)
    # A turn that fell back and was paused (or cut off) goes on where it was.
    fell_back = loaded.fallback.turn if loaded is not None and loaded.fallback else None
    open_turn = controller.history.turn if controller.turn_is_open else None
    if controller.fallback is not None and fell_back is not None and fell_back == open_turn:
        controller.fallback.engaged_turn = fell_back
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


def _fallback(
    config: PodConfig,
    provider: Provider,
    transcript: Transcript,
    alerts: list[tuple[str, str]],
) -> Fallback | None:
    """The fallback model's side of the pod (``fallback_model``), or None; a provider that
    cannot ask another model (the scripted one) says so once."""
    model = config.fallback_model
    if model is None:
        return None
    if not isinstance(provider, SwitchesModel):
        alerts.append(("warn", f"fallback_model = {model!r} is ignored: the {provider.name} "
                               "provider answers as one model"))  # fmt: skip
        return None
    if model == provider.model:
        alerts.append(("warn", f"fallback_model = {model!r} is the pod's own model: ignored"))
        return None
    return Fallback(provider=provider.with_model(model), config=config, keep=transcript.keep)


def _restore_mode(
    controller: Controller, record: ModeRecord, alerts: list[tuple[str, str]]
) -> None:
    """Take back the session's permission mode (its last ``mode`` record), or say why not."""
    modes = controller.modes
    assert modes is not None
    try:
        why = modes.restore(
            parse_mode(record.mode), parse_mode(record.before_plan), parse_mode(record.configured)
        )
    except ModeRefused as exc:  # a hand-edited file: the configured mode applies
        why = f"the session's permission mode is unreadable ({exc})"
    if why is not None:
        alerts.append(("warn", f"{why}; the pod is in {modes.mode} mode"))
    commands = controller.interceptors.commands
    if commands is not None:
        commands.context = dataclasses.replace(commands.context, permission_mode=modes.mode)


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


def _held_prompt(loaded: LoadedSession | None) -> HeldPromptRecord | None:
    """The prompt held when the pod stopped; a command's lines that never reached their run
    are to run yet (``never_started``)."""
    held = loaded.held_prompt if loaded is not None else None
    if held is None or loaded is None or not held.steps:
        return held
    steps = never_started(held.steps, loaded.started_calls)
    return held.model_copy(update={"steps": steps})
