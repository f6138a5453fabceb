"""What the pod answers when an MCP server asks something of its client, and what it does with
what a server tells it.

One :class:`ClientSide` per server gives the ``mcp`` SDK's ``Client`` its callbacks (its
``client_kwargs``), and so the capabilities the pod declares:

* **identity**: ``clientInfo`` is ``pod-orchestrator`` and the installed version;
* **roots**: the workspace, then the extra read and write roots, as ``file://`` URIs;
* **logging**: a server's log messages go to the pod's log under the logger
  ``mcp.<server>``; warnings and worse also become alerts (at most
  :data:`MAX_LOG_ALERTS` per connection, then one that says the rest are in the log);
* **elicitation**: by ``[mcp] elicitation``: ``ask`` (the default) puts a request that
  comes during a call to a person at the pod's clients (:mod:`.elicitation`); ``defaults``
  accepts a form whose required fields all have schema defaults, with those defaults;
  everything else, and every request under ``decline``, is declined with a reason (in the
  result's ``_meta`` and in an alert);
* **sampling**: declined with an error that says how to allow it, unless the server's entry
  says ``sampling = "ask"`` (:mod:`.sampling`).

Progress is per call: :func:`progress_line` is what a progress notification becomes in the
call's live output.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from mcp import types
from mcp.client.session import ClientRequestContext
from pydantic import FileUrl

if TYPE_CHECKING:
    from orchestrator.config.model import PodConfig

Alert = Callable[[str, str], None]
"""``(level, message)``: tells people what happened."""

AskModel = Callable[
    [types.CreateMessageRequestParams], Awaitable[types.CreateMessageResult | types.ErrorData]
]
"""Where a sampling request goes when the server may ask for the pod's model."""

AskPerson = Callable[[types.ElicitRequestParams], Awaitable[types.ElicitResult]]
"""Where a request for input goes when a person is to be asked (``elicitation = "ask"``)."""

Elicitation = Literal["ask", "defaults", "decline"]
"""How the pod answers a server's request for input (``[mcp] elicitation``)."""

CLIENT_NAME = "pod-orchestrator"
MAX_LOG_ALERTS = 20
"""Log messages of warning level or worse that become alerts, per server connection; a
server that warns in a loop must not bury everything else people are told."""
REASON_KEY = "pod-orchestrator/reason"
"""The ``_meta`` key of a declined elicitation's result that says why it was declined."""
SAMPLING_DECLINED = -1
"""The error code the spec's examples use for a sampling request the client's user refused."""

_ALERT_LEVELS: dict[str, str] = {
    "warning": "warn",
    "error": "error",
    "critical": "error",
    "alert": "error",
    "emergency": "error",
}
_LOG_LEVELS: dict[str, int] = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}


def client_version() -> str:
    """The installed pod-orchestrator's version (``0+unknown`` when run from a bare tree)."""
    try:
        return version(CLIENT_NAME)
    except PackageNotFoundError:
        return "0+unknown"


def server_logger(server: str) -> logging.Logger:
    """The logger a server's log messages go to: ``mcp.<server>``, at info level, so what a
    server says reaches the pod's log even where the pod logs only warnings of its own."""
    logger = logging.getLogger(f"mcp.{server}")
    logger.setLevel(logging.INFO)
    return logger


def log_text(data: Any) -> str:
    """A log message's ``data`` as one text: a string as it is, anything else as JSON."""
    if isinstance(data, str):
        return data
    return json.dumps(data, ensure_ascii=False, default=str)


def progress_line(progress: float, total: float | None, message: str | None) -> str:
    """One progress notification as a line of a call's live output: ``[progress 3/10] msg``."""
    done = f"{progress:g}/{total:g}" if total is not None else f"{progress:g}"
    return f"[progress {done}]" + (f" {message}" if message else "") + "\n"


@dataclass(frozen=True)
class ElicitationAnswer:
    """What the pod answers a request for input, and why (for the person and the server)."""

    result: types.ElicitResult
    why: str


def answer_by_defaults(params: types.ElicitRequestParams) -> ElicitationAnswer:
    """Accept a form request whose required fields all have defaults, with every default the
    schema gives; decline anything else, saying why (pure)."""
    if isinstance(params, types.ElicitRequestURLParams):
        return declined("it asks a person to open a web page, and nobody is asked here")
    properties = params.requested_schema.get("properties") or {}
    required = params.requested_schema.get("required") or []
    content = {
        name: schema["default"]
        for name, schema in properties.items()
        if isinstance(schema, dict) and "default" in schema
    }
    missing = [name for name in required if name not in content]
    if missing:
        fields = (
            f"fields {', '.join(missing)} have" if len(missing) > 1 else f"field {missing[0]} has"
        )
        return declined(f"required {fields} no default, and nobody is asked here")
    shown = ", ".join(f"{name}={json.dumps(value)}" for name, value in content.items())
    return ElicitationAnswer(
        types.ElicitResult(action="accept", content=content),
        f"accepted with the schema's defaults ({shown or 'no fields'})",
    )


def declined(why: str) -> ElicitationAnswer:
    """A request for input declined, with why in the result's ``_meta`` and for people."""
    return ElicitationAnswer(
        types.ElicitResult(action="decline", _meta={REASON_KEY: why}), f"declined: {why}"
    )


def answer(policy: Elicitation, params: types.ElicitRequestParams) -> ElicitationAnswer:
    """The pod's answer to a request for input under ``[mcp] elicitation = policy`` (pure)."""
    if policy == "defaults":
        return answer_by_defaults(params)
    if policy == "ask":
        return declined("nobody can be asked here (the server runs outside a pod)")
    return declined(
        'the pod answers no requests for input ([mcp] elicitation = "decline"); with '
        '"defaults" it accepts those whose required fields all have defaults'
    )


@dataclass(frozen=True, kw_only=True)
class ClientSettings:
    """What every server of a pod is told about the client and how its requests are answered."""

    roots: tuple[Path, ...] = ()
    """The directories the pod works in, the workspace first."""
    elicitation: Elicitation = "ask"
    """``[mcp] elicitation``."""


def settings_of(config: PodConfig) -> ClientSettings:
    """A pod's settings: its roots are where it reads and writes, the workspace first."""
    return ClientSettings(
        roots=(config.workspace, *config.read_roots, *config.write_roots),
        elicitation=config.mcp.elicitation,
    )


@dataclass(kw_only=True)
class ClientSide:
    """The pod's side of one server's connection: the SDK's callbacks for that server."""

    server: str
    settings: ClientSettings
    alert: Alert
    ask_model: AskModel | None = None
    """Where a sampling request goes when the server may ask (``sampling = "ask"``)."""
    ask_person: AskPerson | None = None
    """Where a request for input goes under ``elicitation = "ask"`` (None: no pod to ask)."""
    _log_alerts: int = 0
    _sampling_said: bool = False
    _logger: logging.Logger = field(init=False)

    def __post_init__(self) -> None:
        self._logger = server_logger(self.server)

    def client_kwargs(self) -> dict[str, Any]:
        """The ``mcp.Client`` arguments that make the pod this kind of client."""
        return {
            "client_info": types.Implementation(name=CLIENT_NAME, version=client_version()),
            "list_roots_callback": self.list_roots,
            "logging_callback": self.on_log,
            # Servers of protocol 2026-07-28 send log messages only to requests that ask.
            "log_level": "info",
            "elicitation_callback": self.elicit,
            "sampling_callback": self.sample,
        }

    def connected(self) -> None:
        """A new connection: its log messages may raise alerts again."""
        self._log_alerts = 0

    def roots(self) -> list[types.Root]:
        """The pod's roots as MCP roots (each once, the workspace first)."""
        seen: set[Path] = set()
        out: list[types.Root] = []
        for number, path in enumerate(self.settings.roots):
            if path in seen:
                continue
            seen.add(path)
            name = "workspace" if number == 0 else path.name or str(path)
            out.append(types.Root(uri=FileUrl(path.as_uri()), name=name))
        return out

    async def list_roots(self, context: ClientRequestContext) -> types.ListRootsResult:
        """``roots/list``: the workspace and the extra roots."""
        return types.ListRootsResult(roots=self.roots())

    async def on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        """``notifications/message``: into the pod's log; warnings and worse also alerts."""
        text = log_text(params.data)
        where = f"{params.logger}: " if params.logger else ""
        self._logger.log(_LOG_LEVELS.get(params.level, logging.INFO), "%s%s", where, text)
        level = _ALERT_LEVELS.get(params.level)
        if level is None or self._log_alerts > MAX_LOG_ALERTS:
            return
        self._log_alerts += 1
        if self._log_alerts > MAX_LOG_ALERTS:
            self.alert(
                "info",
                f"MCP server {self.server} logged more than {MAX_LOG_ALERTS} warnings; the "
                "rest go only to the pod's log",
            )
            return
        self.alert(level, f"MCP server {self.server} logged ({params.level}): {where}{text[:500]}")

    async def elicit(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        """``elicitation/create``: put to a person, or answered by the ``[mcp] elicitation``
        policy and said."""
        if self.settings.elicitation == "ask" and self.ask_person is not None:
            return await self.ask_person(params)
        reply = answer(self.settings.elicitation, params)
        self._logger.info("asked for input (%s); %s", params.message, reply.why)
        self.alert(
            "info", f"MCP server {self.server} asked for input: {params.message!r}; {reply.why}"
        )
        return reply.result

    async def sample(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.ErrorData:
        """``sampling/createMessage``: declined, with how the user could allow it, unless the
        server may ask (then a person decides)."""
        if self.ask_model is not None:
            return await self.ask_model(params)
        message = (
            f"pod-orchestrator declined the sampling request of MCP server {self.server}: its "
            'model is not lent to MCP servers (a user allows it with sampling = "ask" in '
            f"[mcp.servers.{self.server}])"
        )
        self._logger.info("%s", message)
        if not self._sampling_said:
            self._sampling_said = True
            self.alert("info", f"{message} (said once per server)")
        return types.ErrorData(code=SAMPLING_DECLINED, message=message)
