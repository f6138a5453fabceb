"""What servers ask of the pod as a client (roots, input, its model) and what they tell it (log
messages, progress): each against a real server of ours over stdio, speaking protocol
2026-07-28 (requests for input ride the call's result and its retry)."""

from __future__ import annotations

import base64
import logging
import threading
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest
from mcp import types

from orchestrator.adapters.mcp.client_side import (
    MAX_LOG_ALERTS,
    REASON_KEY,
    ClientSettings,
    answer,
    answer_by_defaults,
    client_version,
    progress_line,
)
from orchestrator.adapters.mcp.results import TASK_ONLY, offers, tool_output
from orchestrator.adapters.mcp.server import McpServer
from orchestrator.adapters.mcp.servers import McpServers
from orchestrator.capabilities.tools.base import ToolError
from orchestrator.config.mcp import McpServerConfig
from tests.mcp.asking_server import config

Alerts = list[tuple[str, str]]


def form(schema: dict[str, object]) -> types.ElicitRequestFormParams:
    return types.ElicitRequestFormParams(message="Who?", requested_schema=schema)  # type: ignore[arg-type]


def test_a_form_whose_required_fields_have_defaults_is_accepted_with_every_default() -> None:
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "note": {"type": "string"},
        },
        "required": ["name"],
    }
    reply = answer_by_defaults(form(schema))
    assert reply.result == types.ElicitResult(
        action="accept", content={"name": "John Doe", "age": 30}
    )
    assert reply.why == 'accepted with the schema\'s defaults (name="John Doe", age=30)'


def test_a_required_field_without_a_default_or_a_url_is_declined_with_the_reason() -> None:
    schema = {
        "type": "object",
        "properties": {"token": {"type": "string"}, "pin": {"type": "integer"}},
        "required": ["token", "pin"],
    }
    reply = answer_by_defaults(form(schema))
    why = "required fields token, pin have no default, and nobody is asked here"
    assert reply.result.action == "decline" and reply.result.content is None
    assert reply.result.meta == {REASON_KEY: why}
    url = types.ElicitRequestURLParams(
        message="Log in", url="https://example.com/x", elicitation_id="e1"
    )
    assert answer_by_defaults(url).result.action == "decline"
    # Under "decline" even a form full of defaults is declined.
    full = {"type": "object", "properties": {"a": {"type": "string", "default": "x"}}}
    assert answer("decline", form(full)).result.action == "decline"
    assert answer("defaults", form(full)).result.content == {"a": "x"}


def test_progress_lines_and_task_only_tools() -> None:
    assert progress_line(2, 5, "copying") == "[progress 2/5] copying\n"
    assert progress_line(0.5, None, None) == "[progress 0.5]\n"
    schema = {"type": "object", "properties": {}}
    tools = [
        types.Tool(name="now", input_schema=schema),
        types.Tool(
            name="later",
            input_schema=schema,
            execution=types.ToolExecution(task_support="required"),
        ),
        types.Tool(
            name="either",
            input_schema=schema,
            execution=types.ToolExecution(task_support="optional"),
        ),
    ]
    assert [(o.tool.name, o.problem) for o in offers("s", tools, allow=[], deny=[])] == [
        ("now", None),
        ("later", TASK_ONLY),
        ("either", None),
    ]


@pytest.fixture
async def asking(tmp_path: Path) -> AsyncIterator[tuple[McpServer, Alerts]]:
    """The asking server, started with the pod's settings: two roots, input by defaults."""
    alerts: Alerts = []
    extra = tmp_path / "docs"
    settings = ClientSettings(roots=(tmp_path, extra, tmp_path), elicitation="defaults")
    servers = McpServers.from_config(
        {"a": McpServerConfig(**config())},
        tmp_path,
        lambda level, message: alerts.append((level, message)),
        settings=settings,
    )
    await servers.start()
    [server] = servers.servers
    assert server.status == "running"
    try:
        yield server, alerts
    finally:
        await servers.close()


async def text_of(server: McpServer, tool: str, **arguments: object) -> str:
    result = await server.call(tool, dict(arguments))
    assert not result.is_error, result
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


async def test_the_roots_are_the_workspace_then_the_extra_roots(
    asking: tuple[McpServer, Alerts], tmp_path: Path
) -> None:
    server, _ = asking
    assert (await text_of(server, "roots")).splitlines() == [
        f"{tmp_path.as_uri()} workspace",
        f"{(tmp_path / 'docs').as_uri()} docs",
    ]


async def test_log_messages_reach_the_pod_log_and_warnings_become_alerts(
    asking: tuple[McpServer, Alerts],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server, alerts = asking
    # The pod logs only its own warnings (serve's logging setup): a server's info still gets in.
    monkeypatch.setattr(logging.getLogger(), "level", logging.WARNING)
    await text_of(server, "chatty", levels=["debug", "info", "warning", "error"])
    logged = [(r.name, r.levelname, r.getMessage()) for r in caplog.records if r.name == "mcp.a"]
    assert logged == [
        ("mcp.a", "INFO", "chatty: a info message"),
        ("mcp.a", "WARNING", "chatty: a warning message"),
        ("mcp.a", "ERROR", "chatty: a error message"),
    ]
    assert alerts == [
        ("warn", "MCP server a logged (warning): chatty: a warning message"),
        ("error", "MCP server a logged (error): chatty: a error message"),
    ]


async def test_a_server_that_warns_in_a_loop_raises_a_bounded_number_of_alerts(
    asking: tuple[McpServer, Alerts],
) -> None:
    server, alerts = asking
    await text_of(server, "chatty", levels=["warning"] * (MAX_LOG_ALERTS + 10))
    assert len(alerts) == MAX_LOG_ALERTS + 1
    assert alerts[-1] == (
        "info",
        f"MCP server a logged more than {MAX_LOG_ALERTS} warnings; the rest go only to the "
        "pod's log",
    )


async def test_a_call_carries_a_progress_token_and_its_progress_comes_as_lines(
    asking: tuple[McpServer, Alerts],
) -> None:
    server, _ = asking
    lines: list[str] = []
    result = await server.call("steps", {"count": 3}, lines.append)
    assert not result.is_error
    assert lines == [f"[progress {n}/3] step {n} of 3\n" for n in (1, 2, 3)]


async def test_input_is_answered_by_defaults_or_declined_and_people_are_told(
    asking: tuple[McpServer, Alerts],
) -> None:
    server, alerts = asking
    assert await text_of(server, "ask") == "accept {'name': 'John Doe', 'age': 30}"
    assert await text_of(server, "ask_token") == "decline"
    assert alerts == [
        (
            "info",
            "MCP server a asked for input: 'Who are you?'; accepted with the schema's defaults "
            '(name="John Doe", age=30)',
        ),
        (
            "info",
            "MCP server a asked for input: 'Your token, please'; declined: required field "
            "token has no default, and nobody is asked here",
        ),
    ]


async def test_sampling_is_declined_with_a_message_that_says_so(
    asking: tuple[McpServer, Alerts],
) -> None:
    server, alerts = asking
    declined = (
        "pod-orchestrator declined the sampling request of MCP server a: its model is not lent "
        'to MCP servers (a user allows it with sampling = "ask" in [mcp.servers.a])'
    )
    for _ in range(2):
        with pytest.raises(ToolError) as failed:
            await server.call("sample", {})
        assert str(failed.value) == f"MCP server a: sample failed: {declined}"
    assert alerts == [("info", f"{declined} (said once per server)")]


def test_the_client_names_itself_with_the_installed_version() -> None:
    from importlib.metadata import version

    assert client_version() == version("pod-orchestrator")
    side = McpServer(
        name="x",
        config=McpServerConfig(command="true"),
        workspace=Path("/"),
        alert=lambda level, message: None,
    ).side
    info = side.client_kwargs()["client_info"]
    assert (info.name, info.version) == ("pod-orchestrator", client_version())


async def test_resources_are_read_text_as_text_images_attached_other_bytes_named(
    asking: tuple[McpServer, Alerts], tmp_path: Path
) -> None:
    from orchestrator.adapters.mcp.resources import ReadMcpResource
    from orchestrator.adapters.scoped_fs import ScopedFS
    from orchestrator.capabilities.tools.base import ToolContext

    server, _ = asking
    servers = McpServers(servers=[server], alert=lambda level, message: None)
    tool = ReadMcpResource(servers)
    ctx = ToolContext(fs=ScopedFS(tmp_path), workspace=tmp_path, scratch_dir=tmp_path)
    text = await tool.run({"server": "a", "uri": "notes://today"}, ctx)
    assert text.summary == "mcp a resource notes://today: 3 lines"
    assert text.content == "[resource notes://today]\n# Today\nWater the plants.\n"
    picture = await tool.run({"server": "a", "uri": "notes://logo.png"}, ctx)
    assert picture.content == "[resource notes://logo.png: image 1, image/png, attached]"
    [image] = picture.images
    assert image.media_type == "image/png"
    data = await tool.run({"server": "a", "uri": "notes://data.bin"}, ctx)
    assert data.content == (
        "[resource notes://data.bin: application/octet-stream, 256 bytes, not shown]"
    )
    assert not data.images
    with pytest.raises(ToolError, match="no MCP server is named 'b'; the servers: a"):
        await tool.run({"server": "b", "uri": "notes://today"}, ctx)
    with pytest.raises(ToolError, match=r"MCP server a: the resource notes://nope failed: "):
        await tool.run({"server": "a", "uri": "notes://nope"}, ctx)


async def test_a_pdf_resource_is_attached_as_a_document_and_a_false_one_is_named(
    asking: tuple[McpServer, Alerts], tmp_path: Path
) -> None:
    from orchestrator.adapters.mcp.resources import ReadMcpResource
    from orchestrator.adapters.scoped_fs import ScopedFS
    from orchestrator.capabilities.tools.base import ToolContext
    from tests.pdf_files import minimal_pdf

    server, _ = asking
    tool = ReadMcpResource(McpServers(servers=[server], alert=lambda level, message: None))
    ctx = ToolContext(fs=ScopedFS(tmp_path), workspace=tmp_path, scratch_dir=tmp_path)
    report = await tool.run({"server": "a", "uri": "notes://report.pdf"}, ctx)
    assert report.summary == "mcp a resource notes://report.pdf: 1 lines, 1 document"
    assert report.content == (
        "[resource notes://report.pdf: document 1, application/pdf, 2 pages, attached]"
    )
    [document] = report.documents
    assert base64.b64decode(document.data) == minimal_pdf(2, "Weekly report")
    assert document.pages == 2 and not report.images
    fake = await tool.run({"server": "a", "uri": "notes://fake.pdf"}, ctx)
    assert fake.content == (
        "[resource notes://fake.pdf: application/pdf, 35 bytes, not shown: "
        "not a PDF: it does not start with %PDF-]"
    )
    assert not fake.documents
    # A tool's result embeds the same PDF: it is attached the same way.
    output = tool_output("a", "report", await server.call("report", {}))
    assert output.summary == "mcp a/report: 2 lines, 1 document"
    assert output.content == (
        "The report:\n[resource notes://report.pdf: document 1, application/pdf, 2 pages, attached]"
    )
    assert output.documents == report.documents


@pytest.fixture
def refusing() -> Iterator[str]:
    """The URL of an HTTP server that answers every request 401, as one that wants OAuth."""

    class Refuse(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Bearer realm="mcp"')
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_DELETE = do_POST

        def log_message(self, *args: object) -> None:
            pass

    http = HTTPServer(("127.0.0.1", 0), Refuse)
    thread = threading.Thread(target=http.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{http.server_port}/mcp"
    finally:
        http.shutdown()
        http.server_close()


async def test_a_server_that_wants_authorization_says_so_and_how(
    refusing: str, tmp_path: Path
) -> None:
    from mcp.shared.auth import OAuthToken

    from orchestrator.adapters.mcp.oauth import OAuthRecord, TokenFile, token_path

    async def started() -> Alerts:
        alerts: Alerts = []
        servers = McpServers.from_config(
            {"t": McpServerConfig(url=refusing)},
            tmp_path,
            lambda level, message: alerts.append((level, message)),
        )
        await servers.start()
        await servers.close()
        return alerts

    assert await started() == [
        (
            "error",
            "MCP server t failed: it answered 401 Unauthorized: it needs authorization; sign in "
            "with `pod mcp login t` (once, in a browser), or, if the server takes a token, set "
            'headers = { Authorization = "Bearer ${TOKEN}" } in [mcp.servers.t]',
        )
    ]
    # Signed in, and the token is refused: sign in again.
    record = OAuthRecord(server_url=refusing, redirect_uri="http://127.0.0.1:1/callback")
    await TokenFile(token_path("t"), record).set_tokens(OAuthToken(access_token="old"))
    assert await started() == [
        (
            "error",
            "MCP server t failed: it answered 401 Unauthorized: its sign-in is no longer "
            "accepted; sign in again with `pod mcp login t`",
        )
    ]


async def test_a_sampling_request_becomes_wire_messages_or_a_reason_to_decline() -> None:
    from orchestrator.adapters.mcp.sampling import (
        SamplingDeclined,
        settle,
        stop_reason,
        wire_messages,
    )

    def request(*content: types.SamplingContent) -> types.CreateMessageRequestParams:
        return types.CreateMessageRequestParams(
            messages=[types.SamplingMessage(role="user", content=list(content))], max_tokens=50
        )

    text = types.TextContent(type="text", text="What is this?")
    image = types.ImageContent(type="image", data="iVBORw0K", mime_type="image/png")
    assert wire_messages(request(text, image)) == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is this?"},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0K"},
                },
            ],
        }
    ]
    audio = types.AudioContent(type="audio", data="AAAA", mime_type="audio/wav")
    with pytest.raises(SamplingDeclined, match="its audio content is not supported"):
        wire_messages(request(audio))
    assert (stop_reason("end_turn"), stop_reason("max_tokens")) == ("endTurn", "maxTokens")
    outside = await settle(None, "a", request(text), in_call=False)
    assert isinstance(outside, types.ErrorData) and outside.code == -1
    assert outside.message == (
        "pod-orchestrator declined the sampling request of MCP server a: it came outside a call "
        "of the server's tools"
    )
