"""Web search and fetch: what a pod's requests declare, decided from the config and the model.

The ``[web]`` settings say what the user wants (``search``: ``auto``/``on``/``off``;
``fetch``: ``auto``/``server``/``local``/``off``); the Models API says what the model can do
(``capabilities.server_tools.web_search``); the provider says whether server tools can run at
all (the scripted provider runs none). :func:`plan_web` turns the three into a
:class:`WebPlan`: whether search is on, whether fetch is the API's server tool, the pod's own
``web_fetch`` tool, or off, *why* each is what it is (``pod status`` prints it), and the
server tools' params to append to every turn request's ``tools`` (the SDK's own param types).

Which tool versions: the Models API reports support per tool, not per version
(``server_tools.web_search`` is true "when the model supports at least one version"). The
pod declares the basic versions, ``web_search_20250305`` and ``web_fetch_20250910``, which
every model with web search takes. The later ones (``_20260209`` on) add dynamic filtering:
the model runs code on the results, so a response carries code-execution blocks the pod's
history does not keep, and that code runs outside Zero Data Retention. ``_20260309`` and
``_20260318`` add only ``use_cache`` and ``response_inclusion``, options the pod never sets.
Moving up is one line in :data:`SEARCH_TOOL` / :data:`FETCH_TOOL` once the history keeps
those blocks.

Web fetch has no capability entry of its own: the API's server tools are one feature, and the
models that run web fetch are those that run web search, so ``server_tools.web_search``
answers for both.

Pure: no I/O; the provider fetches the capabilities.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:  # the SDK is imported only by the provider that talks to the API
    from anthropic.types import (
        ModelCapabilities,
        WebFetchTool20250910Param,
        WebSearchTool20250305Param,
    )

__all__ = [
    "FETCH_TOOL",
    "SEARCH_TOOL",
    "FetchMode",
    "FetchSetting",
    "ModelWeb",
    "SearchSetting",
    "WebPlan",
    "plan_web",
]

SearchSetting = Literal["auto", "on", "off"]
FetchSetting = Literal["auto", "server", "local", "off"]
FetchMode = Literal["server", "local", "off"]

SEARCH_TOOL: Literal["web_search_20250305"] = "web_search_20250305"
"""The web search version the pod declares (see the module: why not a later one)."""
FETCH_TOOL: Literal["web_fetch_20250910"] = "web_fetch_20250910"
"""The web fetch version the pod declares."""


@dataclass(frozen=True, slots=True)
class ModelWeb:
    """What the model and the platform can do with the API's web tools."""

    model: str
    web_search: bool = False
    """The Models API's ``capabilities.server_tools.web_search.supported``."""
    platform: str | None = None
    """Why no server tool can run here whatever the model (``the scripted provider runs no
    server tools``); None where the API runs them."""

    @classmethod
    def from_capabilities(cls, model: str, caps: ModelCapabilities) -> ModelWeb:
        """From the SDK's ``ModelInfo.capabilities``."""
        tools = caps.server_tools
        return cls(model=model, web_search=tools.supported and tools.web_search.supported)

    @classmethod
    def no_server_tools(cls, model: str, why: str) -> ModelWeb:
        """A platform that runs no server tools (``why`` says which)."""
        return cls(model=model, platform=why)


@dataclass(frozen=True, slots=True)
class WebPlan:
    """What the pod's turn requests declare, and why.

    ``local_fetch`` tells the tool registry whether to offer the pod's own ``web_fetch``
    tool; ``server_tools`` go after the client tools in every turn request's ``tools``.
    """

    search: bool = False
    fetch: FetchMode = "off"
    search_why: str = "not decided yet"
    fetch_why: str = "not decided yet"
    server_tools: tuple[dict[str, Any], ...] = field(default=())
    """The server tools' params (``WebSearchTool20250305Param``, ``WebFetchTool20250910Param``)
    in the order they are declared: search, then fetch."""

    @property
    def local_fetch(self) -> bool:
        """Whether the pod offers its own ``web_fetch`` tool (fetch resolved to ``local``)."""
        return self.fetch == "local"

    @property
    def server_fetch(self) -> bool:
        """Whether the API's web fetch tool is declared."""
        return self.fetch == "server"

    def summary(self) -> str:
        """One line for people: ``search on (…) · fetch local (…)``."""
        search = "on" if self.search else "off"
        return f"search {search} ({self.search_why}) · fetch {self.fetch} ({self.fetch_why})"


def plan_web(
    search: SearchSetting,
    fetch: FetchSetting,
    *,
    max_uses: int,
    allowed_domains: Sequence[str] = (),
    blocked_domains: Sequence[str] = (),
    model: ModelWeb | None,
) -> WebPlan:
    """What the requests declare for these settings on this model (``None``: capabilities
    unknown: a compatible endpoint without the Models API).

    A setting the model cannot take (``search = "on"`` on a model without web search) is not
    declared, since the API would refuse every request: the plan says why, and the caller
    raises it as an alert.
    """
    supported, missing = _support(model)
    if search == "off":
        search_on, search_why = False, 'config: search = "off"'
    elif supported is True:
        search_on, search_why = True, f"{_name(model)} supports web search"
        if search == "on":
            search_why += ' (config: search = "on")'
    elif supported is None:
        # Unknown capabilities: ``auto`` asks for nothing, an explicit ``on`` is sent as asked
        # (as thinking does): the user knows their endpoint.
        search_on = search == "on"
        search_why = (
            'config: search = "on"; the model\'s capabilities are unknown'
            if search_on
            else "the model's capabilities are unknown"
        )
    else:
        search_on = False
        search_why = missing if search == "auto" else f'search = "on" is not honoured: {missing}'

    if fetch == "off":
        fetch_mode: FetchMode = "off"
        fetch_why = 'config: fetch = "off"'
    elif fetch == "local":
        fetch_mode, fetch_why = "local", 'config: fetch = "local"'
    elif supported is True:
        fetch_mode = "server"
        fetch_why = f"{_name(model)} runs the API's web fetch" + (
            ' (config: fetch = "server")' if fetch == "server" else ""
        )
    elif fetch == "server" and supported is None:
        fetch_mode = "server"
        fetch_why = 'config: fetch = "server"; the model\'s capabilities are unknown'
    elif fetch == "server":
        fetch_mode, fetch_why = "off", f'fetch = "server" is not honoured: {missing}'
    else:
        fetch_mode = "local"
        fetch_why = (
            "the model's capabilities are unknown: the pod fetches"
            if supported is None
            else f"{missing}: the pod fetches"
        )

    tools: list[dict[str, Any]] = []
    if search_on:
        search_tool: WebSearchTool20250305Param = {
            "type": SEARCH_TOOL,
            "name": "web_search",
            "max_uses": max_uses,
        }
        if allowed_domains:
            search_tool["allowed_domains"] = list(allowed_domains)
        elif blocked_domains:
            search_tool["blocked_domains"] = list(blocked_domains)
        tools.append(dict(search_tool))
    if fetch_mode == "server":
        fetch_tool: WebFetchTool20250910Param = {
            "type": FETCH_TOOL,
            "name": "web_fetch",
            "max_uses": max_uses,
        }
        # The API refuses a tool carrying both lists; the config refuses both at load, and
        # the allow-list (the narrower) wins should both ever reach here.
        if allowed_domains:
            fetch_tool["allowed_domains"] = list(allowed_domains)
        elif blocked_domains:
            fetch_tool["blocked_domains"] = list(blocked_domains)
        tools.append(dict(fetch_tool))
    return WebPlan(
        search=search_on,
        fetch=fetch_mode,
        search_why=search_why,
        fetch_why=fetch_why,
        server_tools=tuple(tools),
    )


def _support(model: ModelWeb | None) -> tuple[bool | None, str]:
    """(whether the server tools run: None when unknown, why not in words)."""
    if model is None:
        return None, ""
    if model.platform is not None:
        return False, model.platform
    if model.web_search:
        return True, ""
    return False, f"{model.model} does not support the API's web tools (the Models API says so)"


def _name(model: ModelWeb | None) -> str:
    return model.model if model is not None else "the model"
