"""Pod configuration: :class:`PodConfig`, every key a pod reads, with its default and meaning.

The model is here; where its values come from is :mod:`orchestrator.config.loading`. Load order, each source overriding the ones before it key by key (tables such as ``[memory]``
merge key by key too):

1. the defaults below;
2. the user's config, ``$XDG_CONFIG_HOME/pod/config.toml`` (``~/.config/pod/config.toml`` when
   ``XDG_CONFIG_HOME`` is unset);
3. the workspace's config, ``<workspace>/.pod/config.toml``, for ordinary keys;
4. the command line: every option that was given (``--no-allow-bash`` is given, and False).

**Grants** are the settings a workspace's file may not give (:mod:`orchestrator.config.grants`
classifies every key): what widens what the model can reach (``allow_bash``, roots outside
the workspace, ``permissions.allow``), programs (``mcp``, ``tool_env``), identities and files the
pod writes or adopts (``name``, ``session``, ``socket``, ``parent_socket``), and where the model's
words come from (``provider``, ``scripted_script``). They come only from the user's config or
the command line. A workspace's config ships with the repository being worked on (a clone can
carry one), so when it sets a grant the value is ignored and the pod raises a ``warn`` alert
at start naming the file, the keys, and how to grant them. A workspace value that only
narrows or stays inside the workspace (``allow_bash = false``, a root inside it) is kept, and
relative paths in the workspace's file are relative to the workspace.

Every knob that changes what the model sees lives here, so a session can be explained from its
config alone.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    field_validator,
    model_validator,
)

from orchestrator.config.hooks import HooksConfig
from orchestrator.config.mcp import McpConfig
from orchestrator.config.paths import (
    POD_NAME_MAX,
    is_pod_name,
    safe_pod_name,
    state_dir,
    user_config_file,
)
from orchestrator.config.permissions import PermissionsConfig
from orchestrator.config.sandbox import SandboxConfig
from orchestrator.config.sections import BedrockConfig, JobsConfig, MemoryConfig, VertexConfig
from orchestrator.config.skills import SkillsConfig
from orchestrator.config.subpods import AgentConfig, SubpodsConfig
from orchestrator.config.telemetry import TelemetryConfig
from orchestrator.config.web import WebConfig
from orchestrator.core.fallback import FALLBACK_CAUSES, FallbackCause
from orchestrator.core.limits import TOOL_OUTPUT_MAX_BYTES
from orchestrator.core.prices import DEFAULT_PRICES, Prices, prices_for
from orchestrator.core.thinking import MIN_BUDGET, ModelThinking, ThinkingPlan, plan_thinking
from orchestrator.core.web import ModelWeb, WebPlan, plan_web

__all__ = [
    "CHECKPOINT_MAX_FILE_BYTES",
    "CHECKPOINT_MAX_FILE_BYTES_LIMIT",
    "CHECKPOINT_MAX_TOTAL_BYTES",
    "CHECKPOINT_MAX_TOTAL_BYTES_LIMIT",
    "DEFAULT_MODEL",
    "PORTABLE_WARNINGS",
    "HostConfig",
    "PodConfig",
    "ProviderName",
]

DEFAULT_MODEL = "claude-sonnet-4-6"
"""The default model (Sonnet 4.5 reaches its end of life on 2026-11-30; 4.6 takes adaptive
thinking and a budget both)."""

CHECKPOINT_MAX_FILE_BYTES = 2 * 1024 * 1024
"""Default cap on one checkpointed file."""
CHECKPOINT_MAX_TOTAL_BYTES = 1024 * 1024 * 1024
"""Default budget of a full checkpoint of the workspace."""
# Upper bounds, for any source: a cloned repository's config may tune the caps, but not make
# the pod copy an unbounded amount of it into the user's state folder.
CHECKPOINT_MAX_FILE_BYTES_LIMIT = 256 * 1024 * 1024
CHECKPOINT_MAX_TOTAL_BYTES_LIMIT = 64 * 1024 * 1024 * 1024


class HostConfig(BaseModel):
    """The ``[host]`` table: ``pod host``, the process that serves many pods (docs/host.md).
    Read from your own config by the CLI and the host; a workspace's file cannot set it."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, defer_build=True)

    enabled: bool = True
    """``pod chat``, ``pod run`` and ``pod attach`` load the workspace's pod into a running
    host, starting one when none runs; ``false`` starts a ``pod serve`` process per pod."""
    idle_unload_s: float = Field(default=600.0, gt=0)
    """Unload a pod nobody has used for this long (no client, no turn) to its session file;
    it loads again when a client connects."""
    max_loaded: int | None = Field(default=None, ge=1)
    """At most this many pods in memory: loading one more unloads the least recently used
    pods that may be unloaded. Unset: no cap."""
    idle_exit_s: float = Field(default=300.0, ge=0)
    """How long a host that ``pod chat`` or ``pod run`` started stays up once it has no pod
    of its own left, so the next command finds it warm; 0: it leaves at once. A host started
    by hand (``pod host``) keeps running."""
    http: str | None = Field(default=None, max_length=64)
    """Serve the host's pods over HTTP too, at ``[HOST:]PORT`` on the loopback (e.g.
    ``"127.0.0.1:8765"``): the API of docs/http.md, for the host ``pod chat`` and ``pod run``
    start as well as ``pod host``. Needs the ``http`` extra. Unset: no HTTP."""


ProviderName = Literal["anthropic", "bedrock", "vertex", "scripted"]
"""Who answers a pod's requests."""

PORTABLE_WARNINGS = "_load_warnings"
"""The key :meth:`PodConfig.portable` keeps the load warnings under (no setting has it)."""


class PodConfig(BaseModel):
    """Everything a pod needs to start."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, defer_build=True)

    workspace: Path = Field(default_factory=Path.cwd)
    """The folder the pod works in; always the one given on the command line."""
    name: str = ""
    """The pod's name (``pod ls``, ``pod attach NAME``, its socket's name): letters, digits,
    ``.``, ``_`` and ``-``, starting with a letter or digit, at most 64. The workspace folder's
    name (with other characters made ``-``) when empty."""
    provider: ProviderName | None = None
    """Who answers: ``anthropic`` (the Messages API), ``bedrock`` (Amazon Bedrock, the
    ``[bedrock]`` table), ``vertex`` (Google Vertex AI, the ``[vertex]`` table) or ``scripted``
    (offline: a script, or the built-in demo). Left out, ``anthropic`` when
    ``ANTHROPIC_API_KEY`` is set, else ``scripted``."""
    model: str = DEFAULT_MODEL
    """The model asked for, named as the provider names it (on Bedrock
    ``anthropic.claude-sonnet-4-6`` or an inference profile such as
    ``us.anthropic.claude-sonnet-4-5-20250929-v1:0``; on Vertex ``claude-sonnet-4-6`` or
    ``claude-sonnet-4-5@20250929``)."""
    max_tokens: int = Field(default=8192, gt=0)
    """The most tokens one model response may have."""
    thinking: Literal["auto", "adaptive", "off"] | Annotated[int, Field(ge=MIN_BUDGET)] = "auto"
    """Extended thinking: ``auto`` (adaptive where the model takes it, else a budget, else
    none; decided from the Models API), ``adaptive``, ``off``, or a budget of thinking tokens
    (at least 1024, below ``max_tokens``). A setting the model refuses is one error before
    any request (docs/thinking.md)."""
    effort: Literal["low", "medium", "high", "xhigh", "max"] | None = None
    """How much effort the model puts in (``output_config.effort``); the model's default when
    unset."""
    thinking_display: Literal["summarized", "omitted"] | None = None
    """With adaptive thinking: ``summarized`` thinking text, or ``omitted`` (signed but empty,
    faster to stream); the model's default when unset."""
    max_rounds: int = Field(default=50, gt=0)
    """A turn stops with ``limit_reached`` after this many model requests."""
    max_turn_tokens: int | None = Field(default=None, gt=0)
    """A turn stops with ``limit_reached`` once its requests used this many tokens (input,
    output and cache); None: no budget. A child pod gets its parent's
    ``subpods.child_max_tokens`` here."""
    budget_usd: float | None = Field(default=None, ge=0)
    """Dollars the session may spend; reaching it pauses the turn (docs/budgets.md). A
    workspace's config may only lower yours."""
    turn_budget_usd: float | None = Field(default=None, ge=0)
    """Dollars one turn (a prompt and all it triggers) may spend; reaching it pauses the turn."""
    provider_max_retries: int = Field(default=4, ge=0, le=10)
    """Retries of a request that failed with 429, 529, a 5xx or a dropped connection, each
    reported as an alert."""
    provider_timeout_s: float = Field(default=600.0, gt=0)
    """Seconds one model request may take."""
    fallback_model: str | None = None
    """A second model on the same provider: a request that still fails after its retries for
    a cause in ``fallback_on`` is sent again to it, and the rest of that turn stays on it
    (docs/providers.md). None: no fallback."""
    fallback_on: list[FallbackCause] = Field(default_factory=lambda: list(FALLBACK_CAUSES))
    """Which failures send a request to ``fallback_model``: ``overloaded`` (529),
    ``server_error`` (another 5xx) and ``not_found`` (404: the model is unknown or not
    available to your key). All three by default."""
    scripted_script: Path | None = None
    """A JSON script for the scripted provider; its built-in demo when unset."""
    bedrock: BedrockConfig = Field(default_factory=BedrockConfig)
    """Amazon Bedrock's region and AWS profile (``provider = "bedrock"``; docs/providers.md)."""
    vertex: VertexConfig = Field(default_factory=VertexConfig)
    """Google Vertex AI's project and region (``provider = "vertex"``; docs/providers.md)."""

    allow_bash: bool = False
    """Let ``bash`` run without asking (a shortcut for an ``allow = ["bash"]`` rule)."""
    permissions: PermissionsConfig = Field(default_factory=PermissionsConfig)
    """Which tool calls run, ask first, or are denied (docs/permissions.md)."""
    bash_timeout_s: float = Field(default=120.0, gt=0)
    """Seconds a ``bash`` command may run unless the model asks for another timeout."""
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)
    """Where ``bash`` commands run: in a bubblewrap sandbox by default (docs/sandbox.md)."""
    host: HostConfig = Field(default_factory=HostConfig)
    """How the CLI runs pods: in one ``pod host`` process, or a process each (docs/host.md)."""
    hooks: HooksConfig = Field(default_factory=HooksConfig)
    """Commands run at points of a turn, as Claude Code's hooks (docs/hooks.md); only your
    own config may set them."""
    web: WebConfig = Field(default_factory=WebConfig)
    """Web search and fetch: the API's server tools, or the pod's own ``web_fetch``
    (docs/web.md); a workspace's config may only narrow them."""
    telemetry: TelemetryConfig = Field(default_factory=TelemetryConfig)
    """OpenTelemetry traces and metrics (docs/telemetry.md); only your own config may set it."""
    skills: SkillsConfig = Field(default_factory=SkillsConfig)
    """Skills, and the folders of skills, commands and agent files (docs/skills.md); a
    workspace's config may only narrow them."""

    tool_output_max_bytes: int = Field(default=TOOL_OUTPUT_MAX_BYTES, ge=0)
    """Cap on the content of one tool result (the rest is cut and marked)."""
    tool_output_overrides: dict[str, int] = Field(default_factory=dict)
    """Per-tool content caps, by tool name."""
    prune_keep_turns: int | None = 3
    """How many recent turns keep their tool results' full content in requests; older results
    send their summary only (docs/pruning.md). None (not expressible in TOML) keeps all."""
    prune_step_tokens: int = Field(default=20_000, ge=0)
    """Pruning waits until it would drop this many tokens, then drops them all at once: every
    prune rewrites history the prompt cache holds, so it happens in steps, not every turn."""

    # -- context economy (orchestrator/runtime/context.py, orchestrator/runtime/compaction.py) --
    context_window: int | None = Field(default=None, gt=0)
    """The model's context window in tokens; learned from the Models API when unset."""
    compact_at: float = Field(default=0.8, gt=0, le=1)
    """Compact before a request whose estimated input passes this share of the window."""
    compact_keep_tokens: int | None = Field(default=None, gt=0)
    """Recent history kept verbatim after a compaction; a tenth of the window when unset."""
    compact_keep_rounds: int = Field(default=2, ge=0)
    """The last tool rounds a compaction keeps whole and verbatim, even over
    ``compact_keep_tokens`` (a round: an assistant message with its thinking, calls and results)."""
    compact_max_files: int = Field(default=5, ge=0)
    """Files read or referenced in the compacted part that are read again and attached."""
    prompt_cache: Literal["5m", "1h", "off"] = "5m"
    """How long prompt-cache entries live (``1h`` costs more to write, survives long pauses)."""
    prices: dict[str, Prices] = Field(default_factory=dict)
    """Dollars per million tokens (and per 1,000 web searches) by model-name prefix, over the
    built-in table."""

    file_ref_style: Literal["system_message", "synthetic_read"] = "system_message"
    """How ``@file`` refs reach the model: a ``[File: path]`` system message holding the file
    after the user message (cut at ``file_ref_max_bytes``), or ``synthetic_read``: a
    ``read_file`` call the pod makes for the model, whose result is the tool's own (numbered
    lines, head and tail of a large file, ``read_file``'s cap)."""
    file_ref_max_bytes: int = Field(default=TOOL_OUTPUT_MAX_BYTES, ge=0)
    """Cap on one attached file's text in the ``system_message`` style (and on an
    ``@knowledge`` record's body)."""
    file_ref_max_count: int = Field(default=20, ge=0)
    """In the ``system_message`` style, the most distinct ``@file`` refs attached for one
    message; the others stay as text and a warning names them (8 MiB of input could otherwise
    hold a hundred thousand refs, each a read)."""
    max_preread_files: int = Field(default=5, ge=0)
    """With ``synthetic_read``, the most files read for one message."""

    read_roots: list[Path] = Field(default_factory=list)
    """Extra readable roots beyond the workspace."""
    write_roots: list[Path] = Field(default_factory=list)
    """Extra writable roots beyond the workspace."""

    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    mcp: McpConfig = Field(default_factory=McpConfig)
    """MCP tool servers (docs/mcp.md)."""
    """The ``[memory]`` table: knowledge records (docs/knowledge.md)."""
    jobs: JobsConfig = Field(default_factory=JobsConfig)
    """The ``[jobs]`` table: background jobs' limits (docs/jobs.md)."""
    inject_resident_knowledge: bool = True
    """List resident knowledge records in the system prompt (its ``## Resident knowledge``
    section). A pod that reviews and rewrites the records turns this off, so it reads them
    with fresh eyes instead of through their old summaries."""

    subpods: SubpodsConfig = Field(default_factory=SubpodsConfig)
    """Delegating to child pods with the ``task`` tool (docs/subpods.md)."""
    agents: dict[str, AgentConfig] = Field(default_factory=dict)
    """Named kinds of child the model may ask ``task`` for: ``[agents.<name>]`` tables."""

    checkpoints: bool = True
    """Record the workspace in a shadow git repository before each turn and each round that
    changes files, so ``rewind`` can bring the files back (docs/rewind.md). Off: rewinding
    restores the conversation only."""
    checkpoint_max_file_bytes: int = Field(
        default=CHECKPOINT_MAX_FILE_BYTES, gt=0, le=CHECKPOINT_MAX_FILE_BYTES_LIMIT
    )
    """Files larger than this are not checkpointed; a rewind leaves them alone and names them
    (at most 256 MiB)."""
    checkpoint_max_total_bytes: int = Field(
        default=CHECKPOINT_MAX_TOTAL_BYTES, gt=0, le=CHECKPOINT_MAX_TOTAL_BYTES_LIMIT
    )
    """When the checkpointed files of the workspace add up to more than this, the pod says so
    once and checkpoints only the files its own tools touch (at most 64 GiB)."""

    session: Path | None = None
    """The session file. Unset, ``pod chat`` and ``pod run`` continue the workspace's latest
    session and ``pod serve`` starts a new one, under ``$XDG_STATE_HOME/pod/sessions/``."""
    socket: Path | None = None
    """Where ``pod serve`` listens when ``--socket`` is not given; ``<runtime dir>/<name>.sock``
    when unset."""
    parent_socket: Path | None = None
    """A parent pod's socket: this pod reports its turn ends, errors and shutdown there."""

    # -- the environment of tool processes (orchestrator/capabilities/tools/environment.py) --
    tool_env_allow: list[str] = Field(default_factory=list)
    """Variables of the pod's environment that tool processes (bash) may see, beyond the
    defaults (PATH, HOME, USER, LOGNAME, SHELL, LANG, LANGUAGE, LC_*, TERM, TZ, TMPDIR).
    ``NAME`` or ``PREFIX*``; a secret-looking name (``*_TOKEN``, ``*_KEY``, ``*_SECRET``,
    ``AWS_*``, ``ANTHROPIC_*``, …) passes only when listed by its exact name."""
    tool_env: dict[str, str] = Field(default_factory=dict)
    """Variables set for tool processes, after the allow-list (e.g. ``{CI = "1"}``)."""

    @field_validator("name")
    @classmethod
    def _plain_name(cls, name: str) -> str:
        # The name becomes a file name in the runtime directory: never a path.
        if name and not is_pod_name(name):
            raise ValueError(
                f"{name!r} is not a pod name: use letters, digits, '.', '_' and '-', starting "
                f"with a letter or digit, at most {POD_NAME_MAX} characters"
            )
        return name

    @field_validator("tool_env_allow")
    @classmethod
    def _env_allow_entries(cls, entries: list[str]) -> list[str]:
        for entry in entries:
            if not (entry == "*" or _is_env_name(entry.removesuffix("*"))):
                raise ValueError(f"{entry!r} is not a variable name or a NAME_PREFIX* glob")
        return entries

    @field_validator("tool_env")
    @classmethod
    def _env_values(cls, env: dict[str, str]) -> dict[str, str]:
        for name, value in env.items():
            if not _is_env_name(name):
                raise ValueError(f"{name!r} is not a variable name")
            if "\0" in value:
                raise ValueError(f"the value of {name} contains a NUL byte")
        return env

    _load_warnings: list[str] = PrivateAttr(default_factory=list)

    @model_validator(mode="after")
    def _absolute_roots(self) -> PodConfig:
        # Relative roots mean "relative to the workspace", whatever the pod's cwd is.
        ws = self.workspace
        self.read_roots = [(ws / p).resolve() for p in self.read_roots]
        self.write_roots = [(ws / p).resolve() for p in self.write_roots]
        if self.memory.workspace_root is not None:
            self.memory.workspace_root = (ws / self.memory.workspace_root).resolve()
        return self

    @model_validator(mode="after")
    def _thinking_fits(self) -> PodConfig:
        # What can be refused without asking the model is refused at load: one clear error.
        if isinstance(self.thinking, int) and self.thinking >= self.max_tokens:
            raise ValueError(
                f"thinking = {self.thinking} (a budget) must be below max_tokens "
                f"({self.max_tokens}); lower it or raise max_tokens"
            )
        if self.thinking_display is not None and self.thinking == "off":
            raise ValueError('thinking_display needs thinking on (thinking = "off" here)')
        return self

    @model_validator(mode="after")
    def _budget_priced(self) -> PodConfig:
        # A budget that cannot count must not pretend to: an unpriced model would spend $0,
        # the fallback model's requests as much as the pod's own.
        if self.budget_usd is None and self.turn_budget_usd is None:
            return self
        for model in (self.model, self.fallback_model):
            if model is not None and self.model_prices(model) is None:
                raise ValueError(
                    f"a budget is set but model {model!r} has no price: set "
                    f'[prices."{model}"] input and output (dollars per million tokens) in '
                    "your own config, or drop the budget"
                )
        return self

    def thinking_plan(self, model: ModelThinking | None) -> ThinkingPlan:
        """What this pod's requests ask for on a model with these capabilities (None:
        unknown); :class:`ThinkingRefused` when the model cannot take the settings."""
        return plan_thinking(
            self.thinking,
            effort=self.effort,
            display=self.thinking_display,
            max_tokens=self.max_tokens,
            model=model,
        )

    def web_plan(self, model: ModelWeb | None) -> WebPlan:
        """What this pod's turn requests declare for the web on a model with these
        capabilities (None: unknown)."""
        web = self.web
        return plan_web(
            web.search,
            web.fetch,
            max_uses=web.max_uses,
            allowed_domains=web.allowed_domains,
            blocked_domains=web.blocked_domains,
            model=model,
        )

    @property
    def load_warnings(self) -> list[str]:
        """What loading ignored and a person should hear about (the pod raises them as alerts)."""
        return self._load_warnings

    def portable(self) -> dict[str, Any]:
        """The config as JSON data for another process (a host, a fleet), what loading warned
        of included: :meth:`from_portable` makes it whole again."""
        data = self.model_dump(mode="json")
        data[PORTABLE_WARNINGS] = list(self._load_warnings)
        return data

    @classmethod
    def from_portable(cls, data: dict[str, Any]) -> PodConfig:
        """A config from :meth:`portable` data (or a plain dump, which carries no warnings);
        raises ValidationError."""
        fields = dict(data)
        warnings = fields.pop(PORTABLE_WARNINGS, None) or []
        config = cls.model_validate(fields)
        config._load_warnings.extend(str(warning) for warning in warnings)
        return config

    def protected_roots(self) -> list[str]:
        """Paths a write to which always asks: the pod's state (sessions, checkpoints, logs),
        the user's pod config, and the session file wherever it is."""
        roots = [state_dir(), user_config_file().parent]
        if self.session is not None:
            roots.append(Path(self.session))
        return [os.path.realpath(root) for root in roots]

    def content_cap(self, tool_name: str) -> int:
        """The content cap for one tool: its override, else the pod-wide cap."""
        return self.tool_output_overrides.get(tool_name, self.tool_output_max_bytes)

    def model_prices(self, model: str) -> Prices | None:
        """The prices of ``model``: the config's table over the built-in one."""
        return prices_for(model, {**DEFAULT_PRICES, **self.prices})

    def resolved_provider(self) -> ProviderName:
        """The provider to use, falling back to the offline scripted one without an API key."""
        if self.provider is not None:
            return self.provider
        return "anthropic" if os.environ.get("ANTHROPIC_API_KEY") else "scripted"

    def pod_name(self) -> str:
        """The pod's name: configured, else the workspace directory's name made safe."""
        return self.name or safe_pod_name(self.workspace.resolve().name)

    def memory_root(self) -> Path:
        """The directory that holds ``knowledge/``."""
        return (self.memory.workspace_root or self.workspace).resolve()


def _is_env_name(name: str) -> bool:
    # ASCII identifiers are exactly the portable names: [A-Za-z_][A-Za-z0-9_]*.
    return name.isascii() and name.isidentifier()
