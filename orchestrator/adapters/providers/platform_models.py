"""What Claude models can do on Amazon Bedrock and Google Vertex AI: the pod's own table.

Neither platform has the Anthropic Models API, which the pod asks for a model's context
window, thinking modes and server tools everywhere else. This table answers instead, by model
family (:func:`family` reads it out of a platform's model id), and docs/providers.md prints it
with its sources. A model it does not list runs with its capabilities unknown, as on a
compatible endpoint without the Models API: ``thinking = "auto"`` sends nothing, explicit
settings are sent as asked, and the window is the config's ``context_window`` or the pod's
default.

Model ids are the platform's own (docs.claude.com, "Model IDs and versioning"): on Bedrock
``anthropic.claude-sonnet-4-5-20250929-v1:0``, dateless from the 4.6 generation
(``anthropic.claude-sonnet-4-6``), with a cross-region inference profile's prefix
(``us.``, ``eu.``, ``apac.``, ``global.``…) or as an inference profile's ARN; on Vertex
``claude-sonnet-4-5@20250929``, dateless from 4.6 (``claude-sonnet-4-6``).

Server tools: the pod declares none on either platform (web search and the API's web fetch
are run by Anthropic's own API; the pod's local ``web_fetch`` still works).

Pure data and string handling; no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from orchestrator.core.thinking import ModelThinking
from orchestrator.core.web import ModelWeb

__all__ = [
    "PLATFORM_MODELS",
    "PLATFORM_NAMES",
    "TABLE_DATE",
    "Platform",
    "PlatformModel",
    "family",
    "platform_model",
    "platform_web",
]

Platform = Literal["bedrock", "vertex"]
PLATFORM_NAMES: dict[Platform, str] = {"bedrock": "Amazon Bedrock", "vertex": "Google Vertex AI"}

TABLE_DATE = "2026-11-29"
"""When the table was last checked against the sources docs/providers.md names."""

_EFFORTS_46 = frozenset({"low", "medium", "high", "max"})


@dataclass(frozen=True, slots=True)
class PlatformModel:
    """One model family's capabilities on the cloud platforms."""

    window: int
    """Input tokens the model takes (its context window)."""
    adaptive: bool = False
    """Takes ``thinking: {type: "adaptive"}``."""
    enabled: bool = False
    """Takes thinking with a budget (``{type: "enabled", budget_tokens: N}``)."""
    efforts: frozenset[str] = frozenset()
    """``output_config.effort`` levels it takes."""

    def thinking(self, model: str) -> ModelThinking:
        """As the pod's thinking planner reads capabilities."""
        return ModelThinking(
            model=model,
            adaptive=self.adaptive,
            enabled=self.enabled,
            disabled=True,
            efforts=self.efforts,
        )


PLATFORM_MODELS: dict[str, PlatformModel] = {
    "claude-opus-4-6": PlatformModel(
        window=1_000_000, adaptive=True, enabled=True, efforts=_EFFORTS_46
    ),
    "claude-sonnet-4-6": PlatformModel(
        window=1_000_000, adaptive=True, enabled=True, efforts=_EFFORTS_46
    ),
    "claude-opus-4-5": PlatformModel(
        window=200_000, enabled=True, efforts=frozenset({"low", "medium", "high"})
    ),
    "claude-haiku-4-5": PlatformModel(window=200_000, enabled=True),
    "claude-sonnet-4-5": PlatformModel(window=200_000, enabled=True),
    "claude-opus-4-1": PlatformModel(window=200_000, enabled=True),
    "claude-opus-4": PlatformModel(window=200_000, enabled=True),
    "claude-sonnet-4": PlatformModel(window=200_000, enabled=True),
    "claude-3-7-sonnet": PlatformModel(window=200_000, enabled=True),
    "claude-3-5-haiku": PlatformModel(window=200_000),
}
"""By model family (the Claude API's alias); the 1M windows are the 4.6 generation's."""

_PROFILE = re.compile(r"^(?:[a-z][a-z-]*\.)?anthropic\.")
_BEDROCK_VERSION = re.compile(r"-v\d+(?::\d+)?$")
_SNAPSHOT = re.compile(r"[@-]\d{8}$")


def family(model: str) -> str:
    """The model family of a platform's model id: ``us.anthropic.claude-sonnet-4-5-20250929-
    v1:0`` and ``claude-sonnet-4-5@20250929`` are both ``claude-sonnet-4-5``."""
    name = model.rsplit("/", 1)[-1]  # an inference profile's ARN ends with the id
    name = _PROFILE.sub("", name)
    name = _BEDROCK_VERSION.sub("", name)
    return _SNAPSHOT.sub("", name)


def platform_model(model: str) -> PlatformModel | None:
    """The table's row for a platform's model id (None: a model it does not list)."""
    return PLATFORM_MODELS.get(family(model))


def platform_web(model: str, platform: Platform) -> ModelWeb:
    """No server tools on the cloud platforms (see the module)."""
    return ModelWeb.no_server_tools(
        model, f"the pod declares no server tools on {PLATFORM_NAMES[platform]}"
    )
