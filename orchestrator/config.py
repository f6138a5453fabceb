"""Pod configuration: defaults, ``<workspace>/.pod/config.toml``, then command-line overrides.

Every knob that changes what the model sees lives here, so a session can be explained from its
config alone.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from orchestrator.errors import SetupError

TOOL_OUTPUT_MAX_BYTES = 16 * 1024
"""Default cap on a tool result's content and on a resolved ``@file`` body."""

DEFAULT_MODEL = "claude-sonnet-4-5"


class ConfigError(SetupError):
    """The configuration file or an option is invalid; the message names the file and field."""


class MemoryConfig(BaseModel):
    """Where ``knowledge/*.md`` lives and whether resident knowledge is injected."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    workspace_root: Path | None = None
    """Root that holds ``knowledge/``; the pod's workspace when unset."""


class PodConfig(BaseModel):
    """Everything a pod needs to start."""

    model_config = ConfigDict(extra="forbid")

    workspace: Path = Field(default_factory=Path.cwd)
    name: str = ""
    provider: Literal["anthropic", "scripted"] | None = None
    """None picks ``anthropic`` when ``ANTHROPIC_API_KEY`` is set, else ``scripted``."""
    model: str = DEFAULT_MODEL
    max_tokens: int = 8192
    max_rounds: int = 50
    """A turn stops with ``limit_reached`` after this many model requests."""
    provider_max_retries: int = 4
    provider_timeout_s: float = 600.0
    scripted_script: Path | None = None
    """A JSON script for the scripted provider; its built-in demo when unset."""

    allow_bash: bool = False
    bash_timeout_s: float = 120.0

    tool_output_max_bytes: int = TOOL_OUTPUT_MAX_BYTES
    tool_output_overrides: dict[str, int] = Field(default_factory=dict)
    """Per-tool content caps, by tool name."""
    prune_keep_turns: int | None = 3
    """Tool results of older turns send their summary only; None keeps everything."""

    file_ref_style: Literal["system_message", "synthetic_read"] = "system_message"
    file_ref_max_bytes: int = TOOL_OUTPUT_MAX_BYTES
    max_preread_files: int = 5

    read_roots: list[Path] = Field(default_factory=list)
    """Extra readable roots beyond the workspace."""
    write_roots: list[Path] = Field(default_factory=list)
    """Extra writable roots beyond the workspace."""

    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    inject_resident_knowledge: bool = True
    """The lever consolidation pods turn off: no ``## Resident knowledge`` section."""

    session: Path | None = None
    """The session file; a per-workspace default under the state dir when unset."""
    socket: Path | None = None
    parent_socket: Path | None = None

    # -- the environment of tool processes (orchestrator/tools/environment.py) --
    tool_env_allow: list[str] = Field(default_factory=list)
    """Variables of the pod's environment that tool processes (bash) may see, beyond the
    defaults (PATH, HOME, USER, LOGNAME, SHELL, LANG, LANGUAGE, LC_*, TERM, TZ, TMPDIR).
    ``NAME`` or ``PREFIX*``; a secret-looking name (``*_TOKEN``, ``*_KEY``, ``*_SECRET``,
    ``AWS_*``, ``ANTHROPIC_*``, …) passes only when listed by its exact name."""
    tool_env: dict[str, str] = Field(default_factory=dict)
    """Variables set for tool processes, after the allow-list (e.g. ``{CI = "1"}``)."""

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

    @model_validator(mode="after")
    def _absolute_roots(self) -> PodConfig:
        # Relative roots mean "relative to the workspace", whatever the pod's cwd is.
        ws = self.workspace
        self.read_roots = [(ws / p).resolve() for p in self.read_roots]
        self.write_roots = [(ws / p).resolve() for p in self.write_roots]
        return self

    def content_cap(self, tool_name: str) -> int:
        """The content cap for one tool: its override, else the pod-wide cap."""
        return self.tool_output_overrides.get(tool_name, self.tool_output_max_bytes)

    def resolved_provider(self) -> Literal["anthropic", "scripted"]:
        """The provider to use, falling back to the offline scripted one without an API key."""
        if self.provider is not None:
            return self.provider
        return "anthropic" if os.environ.get("ANTHROPIC_API_KEY") else "scripted"

    def pod_name(self) -> str:
        """The pod's name: configured, else the workspace directory's name."""
        return self.name or self.workspace.resolve().name or "pod"

    def memory_root(self) -> Path:
        """The directory that holds ``knowledge/``."""
        return (self.memory.workspace_root or self.workspace).resolve()


def _is_env_name(name: str) -> bool:
    # ASCII identifiers are exactly the portable names: [A-Za-z_][A-Za-z0-9_]*.
    return name.isascii() and name.isidentifier()


def config_file(workspace: Path) -> Path:
    """Where a workspace keeps its pod configuration."""
    return workspace / ".pod" / "config.toml"


def load_config(workspace: Path, **overrides: Any) -> PodConfig:
    """Defaults, then the workspace's config file, then non-None overrides."""
    data: dict[str, Any] = {}
    path = config_file(workspace)
    if path.is_file():
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path}: {exc}") from None
    data.update({k: v for k, v in overrides.items() if v is not None})
    data["workspace"] = workspace.resolve()
    try:
        return PodConfig.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"{path}: {where}: {first['msg']}") from None
