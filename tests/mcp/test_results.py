"""MCP tools and results as the model sees them (pure)."""

from __future__ import annotations

import pytest
from mcp import types

from orchestrator.adapters.mcp.results import offers, tool_output
from orchestrator.config.mcp import McpServerConfig, expand, wire_name


def tool(name: str, schema: object = None, **extra: object) -> types.Tool:
    return types.Tool(
        name=name, input_schema=schema or {"type": "object", "properties": {}}, **extra
    )


def test_names_are_what_the_api_takes() -> None:
    assert wire_name("git", "git_log") == "mcp__git__git_log"
    assert wire_name("my.server", "do it/now") == "mcp__my_server__do_it_now"


def test_offers_follow_allow_and_deny_and_refuse_bad_tools() -> None:
    tools = [
        tool("ok"),
        tool("hidden"),
        tool("x" * 130),
        types.Tool.model_construct(name="arr", input_schema={"type": "array"}),
    ]
    got = offers("s", tools, allow=[], deny=["hidden"])
    assert [(o.name[:12], o.problem) for o in got] == [
        ("mcp__s__ok", None),
        ("mcp__s__xxxx", f"its name {wire_name('s', 'x' * 130)} is longer than 128 characters"),
        ("mcp__s__arr", "its input schema is not a JSON Schema object"),
    ]
    assert [o.tool.name for o in offers("s", tools, allow=["ok"], deny=[])] == ["ok"]


def test_results_become_text_and_images_the_model_sees() -> None:
    import base64
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (8, 8)).save(buffer, format="PNG")
    png = base64.b64encode(buffer.getvalue()).decode()
    result = types.CallToolResult(
        content=[
            types.TextContent(type="text", text="line one\nline two"),
            types.ImageContent(type="image", data=png, mime_type="image/png"),
            types.ImageContent(type="image", data="QUJD" * 10, mime_type="image/tiff"),
            types.AudioContent(type="audio", data="QUJD", mime_type="audio/wav"),
            types.EmbeddedResource(
                type="resource",
                resource=types.TextResourceContents(uri="file:///a.txt", text="inside"),
            ),
        ]
    )
    out = tool_output("srv", "look", result)
    assert out.summary == "mcp srv/look: 7 lines, 1 image" and not out.is_error
    assert out.content == (
        "line one\nline two\n[image 1: image/png, attached]\n"
        "[image: image/tiff, 30 bytes, not shown]\n[audio: audio/wav, 3 bytes, not shown]\n"
        "[resource file:///a.txt]\ninside"
    )
    [image] = out.images
    assert (image.media_type, image.data) == ("image/png", png)


def test_an_image_result_reaches_the_wire_after_its_text_and_goes_when_pruned() -> None:
    from orchestrator.core.history import ToolResult
    from orchestrator.core.images import ImageData
    from orchestrator.core.tokens import estimate_block
    from orchestrator.core.wire import tool_result_block

    image = ImageData(media_type="image/png", data="iVBORw0KGgo=")
    item = ToolResult(
        call_id="t1", summary="mcp s/shot: 1 lines, 1 image", content="[image 1]", images=[image]
    )
    block = tool_result_block(item)
    assert block["content"] == [
        {"type": "text", "text": "mcp s/shot: 1 lines, 1 image\n[image 1]"},
        image.block(),
    ]
    assert tool_result_block(item, pruned=True)["content"] == "mcp s/shot: 1 lines, 1 image"
    assert estimate_block(block) < 2000  # counted by pixels, not by its base64


def pdf_resource(
    uri: str, data: bytes, mime_type: str = "application/pdf"
) -> types.EmbeddedResource:
    import base64

    blob = base64.b64encode(data).decode("ascii")
    contents = types.BlobResourceContents(uri=uri, mime_type=mime_type, blob=blob)
    return types.EmbeddedResource(type="resource", resource=contents)


def test_embedded_pdfs_are_documents_within_what_one_request_carries() -> None:
    from tests.pdf_files import minimal_pdf

    result = types.CallToolResult(
        content=[
            pdf_resource("r://a.pdf", minimal_pdf(60)),
            pdf_resource("r://b.pdf", minimal_pdf(50)),
            pdf_resource("r://c.pdf", b"<html>"),
            pdf_resource("r://d.pdf", minimal_pdf(1)),
        ]
    )
    out = tool_output("srv", "docs", result)
    assert out.summary == "mcp srv/docs: 4 lines, 2 documents"
    assert out.content == (
        "[resource r://a.pdf: document 1, application/pdf, 60 pages, attached]\n"
        "[resource r://b.pdf: application/pdf, "
        f"{len(minimal_pdf(50))} bytes, not shown: with the PDFs before it in this result it "
        "passes what one request can carry (100 pages, 20 MB of PDF)]\n"
        "[resource r://c.pdf: application/pdf, 6 bytes, not shown: "
        "not a PDF: it does not start with %PDF-]\n"
        "[resource r://d.pdf: document 2, application/pdf, 1 page, attached]"
    )
    assert [d.pages for d in out.documents] == [60, 1]


def test_a_document_result_reaches_the_wire_after_its_images_and_goes_when_pruned() -> None:
    from orchestrator.core.documents import pdf_document
    from orchestrator.core.history import ToolResult
    from orchestrator.core.images import ImageData
    from orchestrator.core.tokens import BLOCK_OVERHEAD, estimate_block
    from orchestrator.core.wire import tool_result_block
    from tests.pdf_files import minimal_pdf

    image = ImageData(media_type="image/png", data="iVBORw0KGgo=")
    document = pdf_document(minimal_pdf(3))
    item = ToolResult(
        call_id="t1",
        summary="mcp s/r: 1 lines",
        content="[two]",
        images=[image],
        documents=[document],
    )
    block = tool_result_block(item)
    assert block["content"] == [
        {"type": "text", "text": "mcp s/r: 1 lines\n[two]"},
        image.block(),
        document.block(),
    ]
    assert tool_result_block(item, pruned=True)["content"] == "mcp s/r: 1 lines"
    # Counted by its pages, not by its base64.
    pdf_tokens = estimate_block(block["content"][2])
    assert pdf_tokens == document.tokens + BLOCK_OVERHEAD == 3 * 2_500 + BLOCK_OVERHEAD


def test_errors_and_structured_results() -> None:
    failed = tool_output(
        "srv",
        "q",
        types.CallToolResult(content=[types.TextContent(type="text", text="no db")], is_error=True),
    )
    assert (failed.summary, failed.is_error) == ("mcp srv/q failed: no db", True)
    data = tool_output("srv", "q", types.CallToolResult(content=[], structured_content={"n": 1}))
    assert data.content == '{\n "n": 1\n}'


def test_a_server_is_a_command_or_a_url_and_secrets_come_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(ValueError, match="either command"):
        McpServerConfig()
    with pytest.raises(ValueError, match="either command"):
        McpServerConfig(command="x", url="http://y")
    monkeypatch.setenv("TOKEN", "s3cret")
    server = McpServerConfig(
        url="https://mcp.example/x", headers={"Authorization": "Bearer ${TOKEN}"}
    )
    assert server.resolved_headers() == {"Authorization": "Bearer s3cret"}
    assert server.headers == {"Authorization": "Bearer ${TOKEN}"}  # the file keeps the name
    assert expand("${NOT_SET_ANYWHERE}-x") == "-x"
