"""The pod's status as the status line shows it: state, tokens, context, cost, jobs, alert."""

from __future__ import annotations

from dataclasses import dataclass, field

from cli.tui.entries import ALERT_GLYPHS, cut_end, tokens_k
from cli.tui.keys import APPROVAL_KEYS
from cli.tui.status_fit import StatusPart, fit_row, fit_status
from orchestrator.protocol import ChildData, JobData, StatusData, TodoData
from states.queries import awaiting_approval, awaiting_input

ALERT_TTL_S = 20.0
"""How long the status line shows the last alert; the conversation keeps every alert."""


@dataclass
class PodView:
    """The pod's status as the status line shows it."""

    name: str = ""
    model: str = ""
    provider: str = ""
    workspace: str = ""
    status: str = "connecting"
    state: str = ""
    turn: int = 0
    context_percent: int | None = None
    cost_usd: float | None = None
    """What the session cost so far; None for a model the price table does not know."""
    input_tokens: int = 0
    output_tokens: int = 0
    web_searches: int = 0
    """Searches the API's web search tool ran for this session (billed per search)."""
    last_alert: str = ""
    alert_level: str = "warn"
    alert_at: float = 0.0
    connected: bool = False
    children: dict[str, ChildData] = field(default_factory=dict)
    """Live child pods of ``task`` calls, by call id."""
    jobs: list[JobData] = field(default_factory=list)
    """The pod's background jobs, as the last status listed them."""
    permission_mode: str = "default"
    """The pod's permission mode (shown on the status line unless it is ``default``)."""
    todos: list[TodoData] = field(default_factory=list)
    """The model's todo list (the panel above the editor shows it)."""
    run_sent: bool = False
    """A ``run`` (or ``resume``) went out and the pod has not said it runs yet: the keys act
    as while running (a Ctrl-C right after Enter pauses that turn, it does not arm quit)."""

    def update(self, data: StatusData) -> None:
        """Take a ``status`` event (broadcast or reply)."""
        self.connected = True
        if data.status != self.status or data.status == "running":
            self.run_sent = False  # the pod took it (running), or it ended or was refused
        self.status = data.status
        self.state = data.state
        self.name = data.name or self.name
        self.model = data.model or self.model
        self.provider = data.provider or self.provider
        self.workspace = data.workspace or self.workspace
        self.turn = data.turn
        if data.context is not None:
            self.context_percent = data.context.percent
        self.cost_usd = data.cost_usd
        self.children = {child.call_id: child for child in data.children}
        if data.usage:
            # Input counts every kind the model read: uncached, cache writes, cache reads.
            self.input_tokens = sum(n for k, n in data.usage.items() if k.endswith("input_tokens"))
            self.output_tokens = data.usage.get("output_tokens", self.output_tokens)
            self.web_searches = data.usage.get("web_search_requests", self.web_searches)
        self.jobs = list(data.jobs)
        self.permission_mode = data.permission_mode
        self.todos = list(data.todos)

    @property
    def key_status(self) -> str:
        """The status the keys act on: the pod's (``running`` once a run was sent), or
        ``disconnected``."""
        if not self.connected:
            return "disconnected"
        if self.run_sent and self.status in ("idle", "paused"):
            return "running"
        return self.status

    @property
    def state_label(self) -> str:
        """Idle / Running / Paused (with its hint) / Stopped / Disconnected."""
        if not self.connected:
            return "Connecting…" if self.status == "connecting" else "Disconnected"
        if self.status == "paused":
            return "Paused — Enter to resume, type to start new turn"
        if awaiting_approval(self.state):
            return f"Awaiting approval — {APPROVAL_KEYS}"
        if awaiting_input(self.state):
            return "Awaiting input — see the card"
        return self.status.capitalize()

    def alert(self, message: str, now: float, level: str = "warn") -> None:
        """Show an alert's first line, marked by its level, on the status line for
        :data:`ALERT_TTL_S`."""
        self.last_alert = message.splitlines()[0] if message else ""
        self.alert_level = level
        self.alert_at = now

    def alert_expires(self) -> float | None:
        """When the status line's alert goes away, if one is shown."""
        return self.alert_at + ALERT_TTL_S if self.last_alert else None

    def state_forms(self) -> list[str]:
        """The state label, then shorter forms for a narrow terminal (keys kept longest)."""
        label = self.state_label
        if not self.connected:
            return [label]
        if self.status == "paused":
            return [label, "Paused — Enter resumes", "Paused"]
        if awaiting_approval(self.state):
            return [label, "Approve? y · a · n", "Approve?"]
        if awaiting_input(self.state):
            return [label, "Awaiting input"]
        return [label]

    def mode_forms(self) -> list[str]:
        """The permission mode, longest first; none for ``default``. Plan mode is never left
        out: a person must see that nothing will change."""
        mode = self.permission_mode
        if mode == "default":
            return []
        if mode == "plan":
            return ["⏸ plan mode (Shift-Tab: next mode)", "⏸ plan mode", "⏸ plan"]
        return [f"{mode} mode (Shift-Tab)", f"{mode} mode", mode, ""]

    def text(self, now: float | None = None, width: int | None = None) -> str:
        """The status line as plain text: one row of at most ``width`` cells (parts shorten
        by priority, see :mod:`cli.tui.status_fit`), then a row for running jobs and one for
        the last alert, each cut to ``width``. Without a width nothing is shortened."""
        tokens = f"{tokens_k(self.input_tokens)}↑ {tokens_k(self.output_tokens)}↓"
        parts = [
            StatusPart("name", [self.name, cut_end(self.name, 16), ""] if self.name else []),
            StatusPart("model", [self.model, ""] if self.model else []),
            StatusPart(
                "offline",
                ["offline (scripted provider)", "offline", ""]
                if self.provider == "scripted"
                else [],
            ),
            StatusPart("state", self.state_forms()),
            StatusPart("mode", self.mode_forms()),
            StatusPart("tokens", [f"{tokens} tokens", tokens, ""]),
        ]
        if self.web_searches:
            parts.append(StatusPart("searches", [searches_text(self.web_searches), ""]))
        if self.context_percent is not None:
            pct = self.context_percent
            parts.append(StatusPart("context", [f"context {pct}%", f"ctx {pct}%", ""]))
        if self.cost_usd is not None:
            cost = self.cost_usd
            parts.append(StatusPart("cost", [f"${cost:.2f}" if cost >= 1 else f"${cost:.4f}", ""]))
        if self.children:
            n = len(self.children)
            full = f"{n} child pod{'s' if n != 1 else ''} (/children)"
            parts.append(StatusPart("children", [full, f"{n} child{'ren' if n != 1 else ''}", ""]))
        line = fit_status([p for p in parts if p.forms], width)
        running = [job for job in self.jobs if job.state == "running"]
        if running:
            line += "\n" + fit_row(jobs_text(running), width, keep_end="(/jobs)")
        expires = self.alert_expires()
        if expires is not None and (now is None or now < expires):
            glyph = ALERT_GLYPHS.get(self.alert_level, "⚠")
            line += "\n" + fit_row(f"{glyph} {self.last_alert}", width)
        return line


def searches_text(n: int) -> str:
    """``1 search``, ``3 searches``."""
    return f"{n} search{'es' if n != 1 else ''}"


JOBS_NAMED = 3
"""Running jobs the status line names; the rest are counted."""


def jobs_text(running: list[JobData]) -> str:
    """``⚙ 2 background jobs: j1 npm run dev · j2 make`` (names a few, shortened)."""
    from orchestrator.capabilities.jobs.report import short_command

    count = "1 background job" if len(running) == 1 else f"{len(running)} background jobs"
    named = [f"{job.id} {short_command(job.command)[:30]}" for job in running[:JOBS_NAMED]]
    more = f" · +{len(running) - JOBS_NAMED} more" if len(running) > JOBS_NAMED else ""
    return f"⚙ {count}: {' · '.join(named)}{more} (/jobs)"
