"""Who may run what: the permission policy for tool calls, as a pure decision.

Every tool call gets one of three verdicts before it starts: **allow** (it runs), **ask** (a
person approves or denies it first; the pod waits in ``awaiting_approval``), or **deny** (it
does not run; the model gets a result that says so). The verdict is, in order:

1. ``deny`` rules: any match denies (an ``edit(<path>)`` rule also matches a file a command
   line writes by redirection);
2. ``read-only`` mode denies every tool that is not a read, whatever any allow says;
   ``plan`` mode does the same, and refuses ``task`` and the job tools too, saying how to
   leave it (:data:`PLAN_TOOL` asks a person to approve the plan, and is refused outside
   ``plan``);
3. a command the parser could not take apart asks when a deny rule might match it;
4. a write to a protected path (:mod:`.protected`) asks, except in ``yolo``;
5. ``allow`` rules and this session's "always" answers, when they cover the whole call;
6. ``ask`` rules (and a command that might match one);
7. the mode's default for the tool's kind:

   ============  =========  ========  =========  =======
   mode          read       edit      execute    other
   ============  =========  ========  =========  =======
   default       allow      ask       ask        ask
   accept-edits  allow      allow     ask        ask
   yolo          allow      allow     allow      allow
   read-only     allow      deny      deny       deny
   ============  =========  ========  =========  =======

``web_fetch`` is judged by host instead, in :mod:`.web` (a read, except that a domain not yet
allowed asks). Rules see the call as the pod resolved it (:class:`Subject`): canonical paths, and each simple
command of a shell line (:mod:`.shell`). An ``allow`` pattern covers a command line only when
every command in it is covered by some allow rule, nothing in it is opaque, and it redirects
output to no file; a bare ``allow = ["bash"]`` covers any line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from orchestrator.capabilities.permissions.protected import protected_reason
from orchestrator.capabilities.permissions.rules import KIND_ALIASES, Rule, lexical_path
from orchestrator.capabilities.permissions.shell import ParsedCommand, parse_command
from orchestrator.capabilities.permissions.web import WEB_FETCH, fetch_decision, fetch_grant
from orchestrator.config.mcp import wire_name
from orchestrator.config.permissions import MODE_REACH, Mode, PermissionsConfig

if TYPE_CHECKING:
    from orchestrator.config.model import PodConfig

Verdict = Literal["allow", "ask", "deny"]
ToolKind = Literal["read", "edit", "execute", "other"]

MODE_DEFAULTS: dict[Mode, dict[ToolKind, Verdict]] = {
    "default": {"read": "allow", "edit": "ask", "execute": "ask", "other": "ask"},
    "accept-edits": {"read": "allow", "edit": "allow", "execute": "ask", "other": "ask"},
    "yolo": {"read": "allow", "edit": "allow", "execute": "allow", "other": "allow"},
    "read-only": {"read": "allow", "edit": "deny", "execute": "deny", "other": "deny"},
    "plan": {"read": "allow", "edit": "deny", "execute": "deny", "other": "deny"},
}
"""What each mode does with a tool of each kind when no rule matches."""

PLAN_TOOL = "exit_plan_mode"
"""The tool the model calls to show its plan and ask a person to leave ``plan`` mode."""

PLAN_REFUSED: frozenset[str] = frozenset({"task", "job_output", "job_wait", "job_kill"})
"""Tools that are reads for permissions but do not run in ``plan`` mode: a child pod may change
the workspace, and background jobs are commands (none is started, watched or ended while
planning)."""

PLAN_REASON = (
    "nothing is changed or run while planning. Read what you need, "
    "then call exit_plan_mode with your plan; once a person approves it, the pod leaves plan "
    "mode and you can carry it out"
)
"""What a call refused in ``plan`` mode tells the model, after what was refused."""


@dataclass(frozen=True, slots=True)
class Subject:
    """What a call is about, as rules see it."""

    text: str = ""
    """The command or path as the model wrote it (an "always" answer matches this)."""
    paths: tuple[str, ...] = ()
    """Canonical paths the call reads or writes (workspace-relative, absolute outside)."""
    writes: tuple[str, ...] = ()
    """The canonical paths among them, or a command's redirection targets, that it writes."""
    command: ParsedCommand | None = None
    """The shell line taken apart, for a call with a ``command``."""


Canonical = Callable[[str], str]
"""A path as written → the canonical path rules match (the pod's: the scoped file system's)."""


def subject_of(
    arguments: dict[str, Any], kind: str, canonical: Canonical = lexical_path
) -> Subject:
    """What a call's rules are matched against: its command, taken apart, or its path."""
    command = arguments.get("command")
    if isinstance(command, str):
        parsed = parse_command(command)
        writes = tuple(canonical(target) for target in parsed.writes)
        return Subject(text=command, paths=writes, writes=writes, command=parsed)
    path = arguments.get("path")
    if isinstance(path, str):
        real = canonical(path)
        return Subject(text=path, paths=(real,), writes=(real,) if kind == "edit" else ())
    return Subject()


@dataclass(frozen=True, slots=True)
class Decision:
    """A verdict and why, in words for the model and for people."""

    verdict: Verdict
    reason: str
    firm: bool = False
    """An ``ask`` that only a person answers: a ``PreToolUse`` hook's ``allow`` does not lift it
    (a command leaving the sandbox)."""


@dataclass
class Policy:
    """The permission policy of one pod: its rules, mode, and this session's "always"."""

    mode: Mode = "default"
    """The mode now (a person may switch it while the pod runs, within ``configured``'s
    ceiling: :mod:`.modes`)."""
    configured: Mode = "default"
    """The mode the configuration chose: the grant a switch may not go past."""
    allow: list[Rule] = field(default_factory=list)
    ask: list[Rule] = field(default_factory=list)
    deny: list[Rule] = field(default_factory=list)
    granted: list[Rule] = field(default_factory=list)
    """Rules a person added by answering "always" (for the session: recorded in it, and
    granted again when a pod loads it)."""
    turn_granted: list[Rule] = field(default_factory=list)
    """Rules a trusted skill's ``allowed-tools`` gave, until the turn ends (:meth:`end_turn`);
    never recorded, so a pod that loads the session asks again."""
    protected_roots: tuple[str, ...] = ()
    """Absolute directories a write to which always asks (the pod's state and sessions)."""
    sandboxed_bash: Literal["allow", "ask"] | None = None
    """What a sandboxed ``bash`` command gets when no rule decides (``allow``: runs); None:
    as the mode says (``allow`` in ``accept-edits`` and ``yolo``, else ``ask``)."""
    sandboxed: bool = False
    """Whether ``bash`` commands run in the sandbox here (set once the pod found it works)."""

    @classmethod
    def from_config(
        cls,
        config: PermissionsConfig,
        *,
        extra_allow: Iterable[str] = (),
        extra_deny: Iterable[str] = (),
        protected_roots: Iterable[str] = (),
    ) -> Policy:
        """The policy a config describes, plus rules from elsewhere (the command line, the
        MCP servers' entries)."""
        return cls(
            mode=config.mode,
            configured=config.mode,
            sandboxed_bash=config.sandboxed_bash,
            allow=[Rule.parse(r) for r in [*config.allow, *extra_allow]],
            ask=[Rule.parse(r) for r in config.ask],
            deny=[Rule.parse(r) for r in [*config.deny, *extra_deny]],
            protected_roots=tuple(protected_roots),
        )

    def decide(
        self,
        tool: str,
        kind: ToolKind,
        arguments: dict[str, Any],
        subject: Subject | None = None,
    ) -> Decision:
        """The verdict for one call; ``subject`` is what the pod resolved the call to (by
        default its path is taken as written, normalised on its text)."""
        if tool == WEB_FETCH:
            return Decision(*fetch_decision(self, arguments))  # a domain (permissions.web)
        if subject is None:
            subject = subject_of(arguments, kind)
        hit = self._first(self.deny, tool, kind, subject) or self._redirected(self.deny, subject)
        if hit is not None:
            return Decision("deny", f"denied by the rule {hit}")
        if self.mode == "read-only" and kind != "read":
            return Decision("deny", f"read-only mode denies {kind} tools, whatever allows them")
        if tool == PLAN_TOOL:
            if self.mode != "plan":
                return Decision("deny", f"the pod is not in plan mode (it is in {self.mode})")
            # Only a person approves a plan: no rule, "always" answer or hook lifts it.
            return Decision("ask", "leaving plan mode needs your approval of the plan", firm=True)
        if self.mode == "plan" and (kind != "read" or tool in PLAN_REFUSED):
            what = f"{kind} tools" if kind != "read" else tool
            return Decision("deny", f"the pod is in plan mode, which refuses {what}: {PLAN_REASON}")
        if tool == "bash" and arguments.get("sandbox") is False and self.sandboxed:
            return Decision(
                "ask", "it asks to run outside the sandbox: that always asks", firm=True
            )
        opaque = subject.command.opaque if subject.command is not None else ()
        maybe = self._might_match(self.deny, tool, kind, subject)
        if maybe is not None:
            return Decision(
                "ask", f"the rule {maybe} might apply, but {opaque[0]}: a person decides"
            )
        if self.mode != "yolo":
            for path in subject.writes:
                why = protected_reason(path, self.protected_roots)
                if why is not None:
                    return Decision("ask", f"writing {path} always asks: {why}")
        allowed = self._covering(tool, kind, subject)
        if allowed is not None:
            return Decision("allow", f"allowed by the rule {allowed}")
        hit = (
            self._first(self.ask, tool, kind, subject)
            or self._redirected(self.ask, subject)
            or self._might_match(self.ask, tool, kind, subject)
        )
        if hit is not None:
            return Decision("ask", f"the rule {hit} asks")
        if tool == "bash" and self.sandboxed and self._sandboxed_bash() == "allow":
            return Decision("allow", "it runs in the sandbox (permissions.sandboxed_bash)")
        verdict = MODE_DEFAULTS[self.mode][kind]
        return Decision(verdict, f"{self.mode} mode {_VERBS[verdict]} {kind} tools")

    def _sandboxed_bash(self) -> Literal["allow", "ask"]:
        if self.sandboxed_bash is not None:
            return self.sandboxed_bash
        return "allow" if self.mode in ("accept-edits", "yolo") else "ask"

    def offered(self, tool: str, kind: ToolKind) -> bool:
        """Whether to offer a tool to the model at all: not when every call would be denied.

        Decided from the configured mode, once: a switch of mode leaves the tools offered as
        they are (a changed tool list would miss the prompt cache at every switch), and
        :data:`PLAN_TOOL` is offered whenever the pod may be switched to ``plan``.
        """
        if any(r.subject is None and r.covers_tool(tool, kind) for r in self.deny):
            return False
        if tool == PLAN_TOOL:
            return MODE_REACH[self.configured] >= MODE_REACH["plan"]
        if self.configured == "read-only":
            return kind == "read"
        return True

    def grant(self, tool: str, arguments: dict[str, Any]) -> Rule:
        """Allow calls like this one for the rest of the session ("always")."""
        # A command is allowed exactly as shown (``*`` in it is no wildcard); a fetch for its
        # domain; a file tool for its whole kind of call.
        command = arguments.get("command")
        if tool == WEB_FETCH:
            rule = fetch_grant(arguments)  # that domain, not every fetch
        elif isinstance(command, str):
            rule = Rule(tool, command, exact=True)
        else:
            rule = Rule(tool)
        self.granted.append(rule)
        return rule

    def grant_for_turn(self, rules: Iterable[Rule]) -> None:
        """Allow calls these rules cover until the turn ends (a user's skill asked for them);
        deny rules and the modes that refuse still apply first."""
        self.turn_granted.extend(rules)

    def end_turn(self) -> None:
        """The turn ended: what was allowed for it is not any more."""
        self.turn_granted.clear()

    # -- matching

    @staticmethod
    def _matches(rule: Rule, tool: str, kind: str, subject: Subject) -> bool:
        """Whether a deny or ask rule applies to any part of the call."""
        if not rule.covers_tool(tool, kind):
            return False
        if rule.subject is None:
            return True
        if subject.command is not None:
            return (
                rule.matches_text(subject.text)
                if rule.exact
                else any(rule.matches_command(c) for c in subject.command.commands)
            )
        if subject.paths:
            return any(rule.matches_path(p) for p in subject.paths)
        return rule.matches_text(subject.text)

    @staticmethod
    def _redirected(rules: list[Rule], subject: Subject) -> Rule | None:
        """An ``edit(<path>)`` rule covering a file a command line writes by redirection:
        ``echo x > secrets/k`` writes ``secrets/k`` as surely as ``write_file`` would."""
        if subject.command is None or not subject.writes:
            return None
        return next(
            (
                r
                for r in rules
                if r.subject is not None
                and KIND_ALIASES.get(r.tool.lower()) == "edit"
                and any(r.matches_path(path) for path in subject.writes)
            ),
            None,
        )

    def _first(self, rules: list[Rule], tool: str, kind: str, subject: Subject) -> Rule | None:
        return next((r for r in rules if self._matches(r, tool, kind, subject)), None)

    @staticmethod
    def _might_match(rules: list[Rule], tool: str, kind: str, subject: Subject) -> Rule | None:
        """A command rule that cannot be ruled out because part of the line is opaque."""
        if subject.command is None or not subject.command.opaque:
            return None
        return next((r for r in rules if r.subject is not None and r.covers_tool(tool, kind)), None)

    def _covering(self, tool: str, kind: str, subject: Subject) -> Rule | None:
        """An allow rule (or "always" answer) that covers the whole call, or None."""
        every = [*self.allow, *self.granted, *self.turn_granted]
        rules = [r for r in every if r.covers_tool(tool, kind)]
        for rule in rules:
            if rule.subject is None:
                return rule
            if rule.exact and rule.matches_text(subject.text):
                return rule
        patterns = [r for r in rules if r.subject is not None and not r.exact]
        if not patterns:
            return None
        command = subject.command
        if command is not None:
            # Every command of the line must be covered, and nothing may hide from the parser
            # or write a file by redirection (``git status > .bashrc``).
            if command.opaque or command.writes or not command.commands:
                return None
            first: Rule | None = None
            for simple in command.commands:
                cover = next((r for r in patterns if r.matches_command(simple)), None)
                if cover is None:
                    return None
                first = first or cover
            return first
        if subject.paths:
            return next(
                (r for r in patterns if all(r.matches_path(p) for p in subject.paths)), None
            )
        return next((r for r in patterns if r.matches_text(subject.text)), None)


_VERBS: dict[Verdict, str] = {"allow": "allows", "ask": "asks before", "deny": "denies"}


def pod_policy(config: PodConfig) -> Policy:
    """A new permission policy from a pod's ``[permissions]``, ``allow_bash`` and the MCP
    servers' ``permission`` (rules on ``mcp__<name>__*``, after the user's own rules)."""
    servers = config.mcp.servers
    allow = ["bash"] if config.allow_bash else []
    allow += [f"{wire_name(n, '')}*" for n, s in servers.items() if s.permission == "allow"]
    deny = [f"{wire_name(n, '')}*" for n, s in servers.items() if s.permission == "deny"]
    return Policy.from_config(
        config.permissions,
        extra_allow=allow,
        extra_deny=deny,
        protected_roots=config.protected_roots(),
    )


def bash_offered(config: PodConfig) -> bool:
    """Whether the model is offered ``bash`` (not when every command would be denied)."""
    return pod_policy(config).offered("bash", "execute")
