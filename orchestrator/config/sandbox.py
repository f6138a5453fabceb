"""``[sandbox]``: where ``bash`` runs, and what it may reach (docs/sandbox.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from orchestrator.core.hosts import HostRule, parse_host_rule


class SandboxConfig(BaseModel):
    """The sandbox of ``bash`` commands (bubblewrap)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, defer_build=True)

    mode: Literal["auto", "on", "off"] = "auto"
    """``auto``: commands run in the sandbox where bubblewrap works here, otherwise unsandboxed
    with one alert; ``on``: a command that cannot be sandboxed does not run; ``off``: no
    sandbox (only your config or the command line may turn it off)."""
    network: bool | list[str] = False
    """What sandboxed commands may reach: ``false`` nothing, ``true`` the whole network (the
    host's loopback services included), or a list of hosts (``"pypi.org:443"``,
    ``"*.github.com:443"``, ``"pypi.org"`` for ports 80 and 443) reached through the pod's
    proxy by programs that honour ``HTTPS_PROXY``, a listed loopback ``127.0.0.1:8080`` at
    that same address by any program (only your config may allow any)."""
    writable: list[Path] = Field(default_factory=list)
    """Folders sandboxed commands may write besides the workspace and ``write_roots``."""
    readable: list[Path] = Field(default_factory=list)
    """Folders sandboxed commands may read that the sandbox hides otherwise (a secret's
    folder, say)."""

    @field_validator("network")
    @classmethod
    def _hosts_parse(cls, value: bool | list[str]) -> bool | list[str]:
        if isinstance(value, list):
            for entry in value:
                parse_host_rule(entry)  # the ValueError names the entry and the form
        return value

    def host_rules(self) -> tuple[HostRule, ...]:
        """The hosts of a ``network`` list, parsed; empty unless ``network`` is a list."""
        if isinstance(self.network, bool):
            return ()
        return tuple(parse_host_rule(entry) for entry in self.network)
