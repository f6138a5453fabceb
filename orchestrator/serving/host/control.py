"""The host's control protocol: JSON lines on ``<runtime dir>/host.sock``, one request, one
reply, each with the request's ``id``.

Requests: ``load`` (register a pod and load it: a whole configuration, as a parent gives its
child), ``register`` (serve a pod on its socket without loading it: it loads at the first
connection), ``list`` (the host's memory and a row per pod), ``evict``, ``release`` (shut down the
pods this connection owns), ``check`` (would a pod it serves use other provider settings than the
client's), ``stop``. Replies: ``{"id", "ok": true, "data"}`` or
``{"id", "ok": false, "error"}``. A connection from another user or from a sandboxed command
(another PID namespace, :mod:`orchestrator.serving.peer`) gets one ``{"ok": false, "code":
"forbidden", "error"}`` line and is closed.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from orchestrator.errors import PodRuntimeError
from orchestrator.serving.host.settings import ProviderSettings


class HostError(PodRuntimeError):
    """A request the host refuses, or a host that cannot be reached; the message says why."""


HostMethod = Literal["load", "register", "list", "evict", "release", "check", "stop"]


class HostRequest(BaseModel):
    """One line a client writes to the host."""

    model_config = ConfigDict(extra="forbid")

    id: int | str | None = None
    method: HostMethod
    params: dict[str, Any] = Field(default_factory=dict)


class LoadParams(BaseModel):
    """``load`` and ``register``: the pod's whole configuration (``PodConfig`` as JSON), whether to continue
    its latest session, and its socket."""

    model_config = ConfigDict(extra="forbid")

    config: dict[str, Any]
    continue_: bool = Field(False, alias="continue")
    socket: str | None = None
    """Where clients reach it; default: the runtime dir's ``<name>.sock``."""
    owned: bool = False
    """The pod lives as long as this control connection (``pod acp``'s pods): it is shut down
    on ``release`` or when the connection closes, however its owner ended, and it is never
    written to the registry (a restarted host has no owner to give it back to)."""
    provider_settings: ProviderSettings | None = None
    """The client's ``ANTHROPIC_*`` settings as salted digests (``orchestrator/serving/host/settings.py``):
    a pod that would use the host's other settings is refused. Left out: not checked (a pod's
    own ``task`` children, loaded by the host itself)."""


class CheckParams(BaseModel):
    """``check``: would the pod served on ``socket`` use other provider settings than these?
    The reply is the names that differ (empty when none do, when the pod runs offline, or when
    no pod of the host is served there)."""

    model_config = ConfigDict(extra="forbid")

    provider_settings: ProviderSettings
    socket: str


class EvictParams(BaseModel):
    """``evict``: unload this pod now (refused with the reasons when it may not be)."""

    model_config = ConfigDict(extra="forbid")

    name: str


class PodRow(BaseModel):
    """One pod the host knows, loaded or not (``list``, ``pod host ls``)."""

    name: str
    workspace: str
    socket: str
    session: str | None = None
    loaded: bool
    state: str
    """The machine state of a loaded pod; ``unloaded`` otherwise."""
    parent: str | None = None
    """The parent pod of a child pod (a ``task`` call's)."""
    clients: int = 0
    last_active_ms: int
    """When a client last left it, or it last did anything (ms since the epoch)."""
    restored: bool = False
    """Bound again from a gone host's registry and not used since: it does not keep a host
    that leaves with its last pod running (docs/host.md, "When the host dies")."""
    cost_usd: float | None = None
    """What the pod's session cost so far (docs/budgets.md's prices): a loaded pod's spend, an
    unloaded one's when this host last unloaded it; None when unpriced or not known."""
    rss_share_bytes: int | None = None
    """A loaded pod's estimated part of the host's memory (``orchestrator/serving/host/memory.py``);
    None while unloaded, or where the system does not tell the host's memory."""


class HostStats(BaseModel):
    """The host process itself (``list``)."""

    pid: int
    rss_bytes: int | None = None
    """The whole process's resident memory."""
    pss_bytes: int | None = None
    """Its proportional set size (shared pages divided among the processes sharing them)."""
    baseline_rss_bytes: int | None = None
    """Its RSS when it started, before loading any pod; what it grew by since is what the
    loaded pods' ``rss_share_bytes`` split."""
    loaded: int
    registered: int


class HostListing(BaseModel):
    """The reply to ``list``: the host and every pod it knows."""

    host: HostStats
    pods: list[PodRow]


class HostReply(BaseModel):
    """One line the host writes back."""

    id: int | str | None = None
    ok: bool
    data: Any = None
    error: str | None = None
    code: str | None = None
    """Why, in a word, where it matters to a program: ``forbidden`` for a connection the
    host or gateway refuses (another user, a sandboxed command), before any request."""


def forbidden_reply(message: str) -> bytes:
    """The one line a refused control connection gets (``code: "forbidden"``)."""
    return HostReply(ok=False, error=message, code="forbidden").model_dump_json().encode() + b"\n"
