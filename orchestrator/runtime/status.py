"""What ``get_status`` says about the context window and the session's cost, and the same in
words for people (pure).

:class:`StatusBoard` reads the pod through :class:`StatusSource`, the few things a status
names (the controller is one); it never imports the controller, which builds a board.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from orchestrator.config.hooks import HookCommand, HooksConfig
from orchestrator.config.model import PodConfig
from orchestrator.core.usage import TokenUsage
from orchestrator.core.web import WebPlan
from orchestrator.protocol import ContextData, HookData, StatusData, WebData, WebWhyData
from orchestrator.protocol.filling import to_data
from orchestrator.runtime.context import ContextSize
from orchestrator.runtime.status_source import StatusSource
from states import PublicStatus, leaf_state, public_status

if TYPE_CHECKING:
    from orchestrator.adapters.mcp.servers import McpServers
    from orchestrator.capabilities.subpods.children import Children

__all__ = [
    "StatusBoard",
    "StatusSource",
    "budget_line",
    "context_data",
    "hook_data",
    "job_lines",
    "sandbox_summary",
    "session_cost",
    "status_text",
    "web_data",
    "web_line",
]


def context_data(size: ContextSize) -> ContextData:
    """How full the window is, as the protocol reports it."""
    return to_data(ContextData, size, compact_at=round(100 * size.compact_at))


def session_cost(
    config: PodConfig,
    model: str,
    usage: TokenUsage,
    others: Mapping[str, TokenUsage] | None = None,
) -> float | None:
    """Dollars the session's requests cost, from the price table; None for an unpriced model.

    ``others``: the part of ``usage`` other models answered (a fallback, by model), each
    priced at its own prices: the one place a fallback request is priced."""
    prices = config.model_prices(model)
    if prices is None:
        return None
    ttl = config.prompt_cache
    cost = prices.cost(usage, ttl=ttl)
    for other, part in (others or {}).items():
        own = config.model_prices(other)
        if own is None:
            return None
        # Prices are linear in the counts: take the part out at the pod's model's prices.
        cost += own.cost(part, ttl=ttl) - prices.cost(part, ttl=ttl)
    return round(cost, 6)


def web_data(plan: WebPlan | None) -> WebData | None:
    """The web plan as ``status`` reports it (None: not decided yet)."""
    if plan is None:
        return None
    return WebData(
        search="on" if plan.search else "off",
        fetch=plan.fetch,
        why=WebWhyData(search=plan.search_why, fetch=plan.fetch_why),
    )


def web_line(web: dict[str, Any] | None) -> str:
    """``pod status``'s web line: what search and fetch resolved to, and why."""
    if not web:
        return "web not decided yet (the first turn asks the model)"
    why = web.get("why") or {}
    return (
        f"web search {web['search']} ({why.get('search', '')}) · "
        f"fetch {web['fetch']} ({why.get('fetch', '')})"
    )


def budget_line(budget: dict[str, Any], pause_reason: str | None) -> str:
    """The budgets and the spend against them (docs/budgets.md), in one line."""

    def cap(value: float | None) -> str:
        return "no cap" if value is None else f"${value:.4f}"

    line = (
        f"budget: session ${budget['spent_usd']:.4f} of {cap(budget['budget_usd'])} · "
        f"turn ${budget['turn_spent_usd']:.4f} of {cap(budget['turn_budget_usd'])}"
    )
    if pause_reason == "budget":
        line += " · paused at the budget (pod budget set, then pod resume)"
    return line


def status_text(data: dict[str, Any]) -> str:
    """``pod status`` for a person: state, model, turn, tokens, context and cost."""
    usage = data.get("usage") or {}
    tokens = f"tokens in {usage.get('input_tokens', 0):,} out {usage.get('output_tokens', 0):,}"
    cached = usage.get("cache_read_input_tokens", 0)
    if cached:
        tokens += (
            f" (cache read {cached:,}, written {usage.get('cache_creation_input_tokens', 0):,})"
        )
    # Searches are billed apiece, so they stand beside the tokens they are priced with.
    for kind, label in (("web_search_requests", "search"), ("web_fetch_requests", "fetch")):
        if count := usage.get(kind, 0):
            tokens += f" · {count:,} web {label}{'es' if count != 1 else ''}"
    # The machine's state says more only where it differs from the coarse status.
    state = f" ({data['state']})" if data["state"] != data["status"] else ""
    lines = [
        f"{data['name']} {data['status']}{state} · {data['provider']}/{data['model']}"
        f" · turn {data['turn']}",
        tokens + (f" · ${data['cost_usd']:.4f}" if data.get("cost_usd") is not None else ""),
    ]
    context = data.get("context")
    if context:
        lines.append(
            f"context {context['percent']}% of {context['window']:,} tokens "
            f"({context['used']:,} used; compacts at {context['compact_at']}%)"
        )
    thinking = data.get("thinking") or "not asked yet"
    lines.append(
        f"thinking {thinking} · sandbox {data.get('sandbox') or 'unknown'}"
        f" · mode {data.get('permission_mode') or 'default'}"
    )
    lines.append(web_line(data.get("web")))
    budget = data.get("budget") or {}
    if budget.get("budget_usd") is not None or budget.get("turn_budget_usd") is not None:
        lines.append(budget_line(budget, data.get("pause_reason")))
    waiting = data.get("approvals") or []
    if waiting:
        lines.append(
            f"{len(waiting)} call(s) awaiting approval: "
            + ", ".join(f"{a['tool']} ({a['id']})" for a in waiting)
        )
    asking = data.get("elicitations") or []
    if asking:
        lines.append(
            f"{len(asking)} request(s) for input waiting: "
            + ", ".join(f"MCP server {e['server']} ({e['id']})" for e in asking)
        )
    for server in data.get("mcp") or []:
        lines.append(
            f"mcp {server['name']}: {server['status']}"
            + (f", {len(server['offered'])} tools offered" if server["tools"] else "")
            + (f", restarted {server['restarts']}×" if server.get("restarts") else "")
            + (
                f", {len(server['survivors'])} process(es) left running unsupervised"
                if server.get("survivors")
                else ""
            )
        )
    for child in data.get("children") or []:
        doing = f", running {child['tool']}" if child.get("tool") else ""
        lines.append(f"child {child['name']}: {child['state']}{doing} · {child['tokens']:,} tokens")
    lines.extend(job_lines(data.get("jobs") or []))
    for hook in data.get("hooks") or []:
        matcher = f" [{hook['matcher']}]" if hook.get("matcher") not in (None, "", "*") else ""
        where = "sandboxed" if hook.get("sandboxed") else "unsandboxed"
        lines.append(
            f"hook {hook['event']}{matcher}: {hook['command']} · {hook['timeout_s']:g} s · "
            f"on failure {hook['on_failure']} · {where}"
        )
    todos = data.get("todos") or []
    if todos:
        done = sum(1 for t in todos if t["status"] == "completed")
        now = next((t for t in todos if t["status"] == "in_progress"), None)
        # One line whatever the model wrote: its line breaks could pass for lines of ours.
        doing = f" · now: {' '.join(str(now['content']).split())[:100]}" if now else ""
        lines.append(f"todos {done}/{len(todos)} done{doing}")
    lines.append(f"workspace {data['workspace']}")
    lines.extend(f"! warning: {warning}" for warning in data.get("config_warnings") or [])
    return "\n".join(lines)


def sandbox_summary(c: StatusSource) -> str:
    """Where ``bash`` commands run, in words (``pod status`` shows it beside thinking)."""
    from orchestrator.capabilities.tools.bash import BashTool

    config = c.config.sandbox
    bash = c.tools.registry.get("bash")
    if not isinstance(bash, BashTool):
        return f"{config.mode} (no bash tool)"
    if config.mode == "off":
        return "off: commands run unsandboxed"
    sandboxing = bash.sandboxing
    if sandboxing is None or sandboxing.bwrap is None:
        why = sandboxing.unavailable if sandboxing is not None else "not set up"
        then = "commands are refused" if config.mode == "on" else "commands run unsandboxed"
        return f"unavailable ({why}): {then}"
    network = config.network
    reach = (
        "network on"
        if network is True
        else f"network to {', '.join(network)}"
        if network
        else "network off"
    )
    return f"on · {reach}"


def job_lines(jobs: list[dict[str, Any]], now_ms: int | None = None) -> list[str]:
    """A line per background job: ``job j1 running 3m12s · 4.1 KB · npm run dev``."""
    from orchestrator.capabilities.jobs.report import duration, exit_text, short_command, size

    now = now_ms if now_ms is not None else int(time.time() * 1000)
    lines = []
    for job in jobs:
        if job["state"] == "running":
            state = f"running {duration((now - job['started_ms']) / 1000)}"
        elif job["state"] == "killed":
            state = "killed"
        else:
            state = exit_text(job.get("exit_code")).replace("exit", "exited", 1)
        lines.append(
            f"job {job['id']} {state} · {size(job.get('output_bytes', 0))} · "
            f"{short_command(job['command'])}"
        )
    return lines


class StatusBoard:
    """What ``status`` says, and when it is said: a machine listener that broadcasts the
    status whenever the pod comes to a new leaf state whose public status or name differs."""

    def __init__(self, controller: StatusSource) -> None:
        self.controller = controller
        self.active = False
        """Off while the machine enters its initial state (the controller is being built)."""
        self._last: tuple[PublicStatus, str] | None = None
        self.mcp: McpServers | None = None
        """The pod's MCP servers, once they are started."""
        self.children: Children | None = None
        """The child pods of ``task`` calls (None: the pod offers no ``task``)."""
        self._name = controller.config.pod_name()
        """Resolved once: status is asked for often, and resolving the workspace is syscalls."""

    def start(self) -> None:
        """The machine is built: remember where it is and announce changes from now on."""
        self._last = self.key()
        self.active = True

    def key(self) -> tuple[PublicStatus, str]:
        """The coarse status and the leaf state."""
        values = frozenset(self.controller.machine.configuration_values)
        return public_status(values), leaf_state(values)

    def on_enter_state(self, target: Any) -> None:
        """Announce the status on entering a leaf state (before the edge's ``after`` actions)."""
        if self.active and target.is_atomic:
            self.changed()

    def changed(self) -> None:
        """Broadcast ``status`` if it changed."""
        key = self.key()
        if key == self._last:
            return
        self._last = key
        self.controller.emit("status", self.data())

    def jobs_changed(self) -> None:
        """A background job started or ended: broadcast the status with the new list."""
        if self.active:
            self.controller.emit("status", self.data())

    def budget_changed(self) -> None:
        """A budget changed (``set_budget``): broadcast the status with the new caps."""
        if self.active:
            self.controller.emit("status", self.data())

    def mode_changed(self) -> None:
        """The permission mode switched: broadcast the status with the new one."""
        if self.active:
            self.controller.emit("status", self.data())

    def data(self, request_id: Any = None) -> StatusData:
        """The ``status`` event payload."""
        c = self.controller
        status, state = self.key()
        return StatusData(
            status=status,
            state=state,
            phase=c.phase,
            name=self._name,
            model=c.provider.model,
            provider=c.provider.name,
            workspace=str(c.config.workspace),
            session=str(c.transcript.session.path),
            turn=c.history.turn,
            usage=asdict(c.session_usage),
            turn_usage=asdict(c.turn_usage),
            context=context_data(c.context.size()),
            thinking=(
                f"refused: {c.thinking_refused}"
                if c.thinking_refused
                else c.thinking.summary
                if c.thinking
                else ""
            ),
            web=web_data(c.web),
            sandbox=sandbox_summary(c),
            # Each request priced as it was counted (a long-context request at its own price).
            cost_usd=c.cost_usd(),
            budget=c.budget_data(),
            pause_reason=c.pause_reason(status == "paused"),
            approvals=c.approvals.pending(),
            elicitations=c.elicitations.pending(),
            mcp=self.mcp.report(set(c.tools.registry.names())) if self.mcp else [],
            children=self.children.report() if self.children else [],
            jobs=c.jobs.data() if c.jobs is not None else [],
            hooks=hook_data(
                c.config.hooks,
                sandboxed=(
                    c.interceptors.commands.runner.sandboxed
                    if c.interceptors.commands is not None
                    else None
                ),
            ),
            config_warnings=list(c.config.load_warnings),
            permission_mode=c.tools.policy.mode if c.tools.policy is not None else "yolo",
            todos=c.todos.data() if c.todos is not None else [],
            thinking_setting=str(c.config.thinking),
            effort=c.config.effort or "",
            pending=_pending(getattr(c, "pending_model", None)),
            id=request_id,
        )


def _pending(change: Any) -> dict[str, str]:
    """A ``set_model`` change waiting for the next turn, in words (``ModelChange``)."""
    return change.described() if change is not None else {}


def hook_data(
    hooks: HooksConfig, *, sandboxed: Callable[[HookCommand], bool] | None
) -> list[HookData]:
    """The configured hook commands, as ``status`` lists them; ``sandboxed`` tells where one
    runs (None: no hook runs here, none in a sandbox)."""
    return [
        HookData(
            event=str(event),
            matcher=matcher.matcher,
            command=hook.command,
            timeout_s=hook.timeout,
            on_failure=hook.failure(event),
            sandboxed=sandboxed is not None and sandboxed(hook),
        )
        for event, matcher, hook in hooks.configured()
    ]
