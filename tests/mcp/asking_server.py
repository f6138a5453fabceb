"""An MCP server that asks things of its client, written with the ``mcp`` package.

    python -m tests.mcp.asking_server [--http PORT]

Tools: ``roots`` (the client's roots, one URI a line), ``chatty`` (logs a message at each of
the levels it is given, then answers), ``steps`` (reports progress ``count`` times, each with a
message),
``ask`` and ``ask_token`` (ask for input: with defaults for every field, or with a required field that has none,
and say what came back), ``sample`` (asks the client's model, and says what came back),
``check_in`` (a resource link to ``notes://today``), ``report`` (a PDF, embedded in the result).
Resources: ``notes://today`` (text), ``notes://logo.png`` (a PNG), ``notes://data.bin`` (bytes
of no known type), ``notes://report.pdf`` (a two-page PDF), ``notes://fake.pdf`` (HTML that
says it is a PDF).
"""

from __future__ import annotations

import argparse
import base64
import sys
from pathlib import Path
from typing import Annotated, Any

from mcp import types
from mcp.server.elicitation import AcceptedElicitation, ElicitationResult
from mcp.server.mcpserver import Context, Elicit, ListRoots, MCPServer, Resolve, Sample
from pydantic import BaseModel, Field

from tests.mcp.hostile_server import _png
from tests.pdf_files import minimal_pdf


def config(*args: str, **extra: Any) -> dict[str, Any]:
    """An ``[mcp.servers.<name>]`` entry that runs this server (its tools allowed)."""
    return {
        "command": sys.executable,
        "args": ["-m", "tests.mcp.asking_server", *args],
        "cwd": str(Path(__file__).resolve().parents[2]),
        "permission": "allow",
        **extra,
    }


class Defaults(BaseModel):
    """A form whose every field has a default."""

    name: str = Field(default="John Doe", description="Your name")
    age: int = Field(default=30, description="Your age")


class NoDefault(BaseModel):
    """A form with a required field that has no default."""

    token: str = Field(description="A secret only a person knows")
    remember: bool = Field(default=False)


def _roots() -> ListRoots:
    return ListRoots()


def _ask() -> Elicit[Defaults]:
    return Elicit("Who are you?", Defaults)


def _ask_token() -> Elicit[NoDefault]:
    return Elicit("Your token, please", NoDefault)


def _sample() -> Sample:
    text = types.TextContent(type="text", text="A haiku?")
    return Sample([types.SamplingMessage(role="user", content=text)], max_tokens=100)


def _said(answer: ElicitationResult[Any]) -> str:
    if isinstance(answer, AcceptedElicitation):
        return f"accept {answer.data.model_dump()}"
    return answer.action


def build() -> MCPServer:
    """The server and its tools."""
    server = MCPServer("asking")

    @server.tool()
    async def roots(listing: Annotated[types.ListRootsResult, Resolve(_roots)]) -> str:
        """The client's roots."""
        return "\n".join(f"{root.uri} {root.name}" for root in listing.roots)

    @server.tool()
    async def chatty(levels: list[str], ctx: Context) -> str:
        """Log one message at each level."""
        for level in levels:
            await ctx.log(level, f"a {level} message", logger_name="chatty")  # type: ignore[arg-type]
        return f"logged {len(levels)}"

    @server.tool()
    async def steps(ctx: Context, count: int = 3) -> str:
        """Report progress ``count`` times."""
        for step in range(1, count + 1):
            await ctx.report_progress(step, count, f"step {step} of {count}")
        return f"{count} steps done"

    @server.tool()
    async def ask(answer: Annotated[ElicitationResult[Defaults], Resolve(_ask)]) -> str:
        """Ask for input with defaults for every field; say what came back."""
        return _said(answer)

    @server.tool()
    async def ask_token(
        answer: Annotated[ElicitationResult[NoDefault], Resolve(_ask_token)],
    ) -> str:
        """Ask for input with a required field that has no default; say what came back."""
        return _said(answer)

    @server.tool()
    async def sample(reply: Annotated[types.CreateMessageResult, Resolve(_sample)]) -> str:
        """Ask the client's model for a haiku."""
        return f"sampled: {reply.content}"

    @server.tool()
    def check_in() -> list[types.ContentBlock]:
        """A link to today's notes."""
        return [
            types.TextContent(type="text", text="See today's notes."),
            types.ResourceLink(type="resource_link", uri="notes://today", name="today"),
        ]

    @server.tool()
    def report() -> list[types.ContentBlock]:
        """This week's report, as a PDF in the result."""
        blob = types.BlobResourceContents(
            uri="notes://report.pdf",
            mime_type="application/pdf",
            blob=base64.b64encode(minimal_pdf(2, "Weekly report")).decode("ascii"),
        )
        return [
            types.TextContent(type="text", text="The report:"),
            types.EmbeddedResource(type="resource", resource=blob),
        ]

    @server.resource("notes://report.pdf", mime_type="application/pdf")
    def report_pdf() -> bytes:
        """This week's report: two pages."""
        return minimal_pdf(2, "Weekly report")

    @server.resource("notes://fake.pdf", mime_type="application/pdf")
    def fake_pdf() -> bytes:
        """A web page that says it is a PDF."""
        return b"<html><body>not a pdf</body></html>"

    @server.resource("notes://today", mime_type="text/markdown")
    def today() -> str:
        """Today's notes."""
        return "# Today\nWater the plants.\n"

    @server.resource("notes://logo.png", mime_type="image/png")
    def logo() -> bytes:
        """A small grey picture."""
        return _png()

    @server.resource("notes://data.bin", mime_type="application/octet-stream")
    def data() -> bytes:
        """Bytes of no known kind."""
        return bytes(range(256))

    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, default=0)
    args = parser.parse_args()
    server = build()
    if args.http:
        server.run("streamable-http", host="127.0.0.1", port=args.http)
    else:
        server.run()


if __name__ == "__main__":
    main()
