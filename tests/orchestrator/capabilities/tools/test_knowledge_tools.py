"""``knowledge_search`` and ``memory_read`` against real records."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from orchestrator.adapters.scoped_fs import ScopedFS
from orchestrator.capabilities.hooks.chain import InterceptorChain
from orchestrator.capabilities.tools.base import Tool, ToolContext, ToolError, ToolOutput
from orchestrator.capabilities.tools.knowledge import (
    SEARCH_MAX_LIMIT,
    KnowledgeSearchTool,
    MemoryReadTool,
)
from orchestrator.capabilities.tools.registry import ToolRegistry
from orchestrator.core.history import Item, ToolResult, ToolUseBlock
from orchestrator.runtime.tool_runner import ToolRunner


def write_record(root: Path, slug: str, description: str, body: str, invoke: bool = False) -> None:
    path = root / "knowledge" / f"{slug}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    flag = "true" if invoke else "false"
    path.write_text(
        f"---\ndescription: {description}\nmodel_invokation: {flag}\n---\n{body}",
        encoding="utf-8",
    )


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return ToolContext(fs=ScopedFS(workspace), workspace=workspace, scratch_dir=workspace / ".s")


@pytest.fixture
def memory(tmp_path: Path) -> Path:
    # Outside the pod's workspace on purpose: the tools read through their own scope.
    root = tmp_path / "memory"
    write_record(root, "deploy", "How to deploy.", "1. Build\n2. Ship\n", invoke=True)
    write_record(root, "testing", "Running the tests.", "Use pytest; deploy never.\n")
    write_record(root, "style", "Code style.", "Short functions.\n")
    return root


def test_tool_names_and_schemas(memory: Path) -> None:
    tools: list[Tool] = [KnowledgeSearchTool(memory), MemoryReadTool(memory)]

    assert [tool.name for tool in tools] == ["knowledge_search", "memory_read"]
    assert [tool.input_schema["required"] for tool in tools] == [["query"], ["slug"]]


async def test_search_lists_matches_best_first(memory: Path, ctx: ToolContext) -> None:
    out = await KnowledgeSearchTool(memory).run({"query": "DEPLOY"}, ctx)

    assert out == ToolOutput(
        summary="knowledge_search: 2 records for 'DEPLOY'",
        content="- deploy: How to deploy.\n- testing: Running the tests.",
    )


async def test_search_honours_limit(memory: Path, ctx: ToolContext) -> None:
    out = await KnowledgeSearchTool(memory).run({"query": "deploy", "limit": 1}, ctx)

    assert out == ToolOutput(
        summary="knowledge_search: 1 record for 'deploy'", content="- deploy: How to deploy."
    )


async def test_search_without_matches(memory: Path, ctx: ToolContext) -> None:
    out = await KnowledgeSearchTool(memory).run({"query": "kubernetes"}, ctx)

    assert out == ToolOutput(summary="knowledge_search: no records match 'kubernetes'")


async def test_search_without_knowledge_folder(tmp_path: Path, ctx: ToolContext) -> None:
    out = await KnowledgeSearchTool(tmp_path / "empty").run({"query": "x"}, ctx)

    assert out.summary == "knowledge_search: no records match 'x'"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({}, "missing required argument 'query'"),
        ({"query": "  "}, "argument 'query' must be a non-empty string, got '  '"),
        ({"query": 3}, "argument 'query' must be a non-empty string, got int"),
        ({"query": "x", "limit": "5"}, "argument 'limit' must be an integer, got '5'"),
        ({"query": "x", "limit": True}, "argument 'limit' must be an integer, got True"),
        ({"query": "x", "limit": 0}, "argument 'limit' must be at least 1, got 0"),
    ],
)
async def test_search_rejects_bad_args(
    memory: Path, ctx: ToolContext, args: dict[str, object], message: str
) -> None:
    with pytest.raises(ToolError) as info:
        await KnowledgeSearchTool(memory).run(dict(args), ctx)
    assert str(info.value) == message


async def test_search_limit_above_the_maximum_is_shortened(
    tmp_path: Path, ctx: ToolContext
) -> None:
    for n in range(SEARCH_MAX_LIMIT + 5):
        write_record(tmp_path, f"r{n:02}", "Release note.", "release\n")
    out = await KnowledgeSearchTool(tmp_path).run({"query": "release", "limit": 1000}, ctx)
    assert out.summary == f"knowledge_search: {SEARCH_MAX_LIMIT} records for 'release'"


async def test_memory_read_returns_the_body(memory: Path, ctx: ToolContext) -> None:
    out = await MemoryReadTool(memory).run({"slug": "deploy"}, ctx)

    assert out == ToolOutput(summary="memory_read: deploy — 2 lines", content="1. Build\n2. Ship")


async def test_memory_read_accepts_a_file_name(memory: Path, ctx: ToolContext) -> None:
    out = await MemoryReadTool(memory).run({"slug": "style.md"}, ctx)

    assert out == ToolOutput(summary="memory_read: style — 1 line", content="Short functions.")


async def test_memory_read_unknown_slug(memory: Path, ctx: ToolContext) -> None:
    with pytest.raises(ToolError) as info:
        await MemoryReadTool(memory).run({"slug": "deploi"}, ctx)

    assert str(info.value) == "no knowledge record 'deploi'; similar: deploy"


@pytest.mark.parametrize(
    ("slug", "message"),
    [
        ("../ws/secret", "slug"),
        ("/etc/passwd", "slug"),
        ("", "argument 'slug' must be a non-empty string, got ''"),
    ],
)
async def test_memory_read_refuses_paths(
    memory: Path, ctx: ToolContext, slug: str, message: str
) -> None:
    with pytest.raises(ToolError, match=re.escape(message)):
        await MemoryReadTool(memory).run({"slug": slug}, ctx)


async def test_memory_read_bad_record(memory: Path, ctx: ToolContext) -> None:
    (memory / "knowledge" / "broken.md").write_text("no frontmatter\n", encoding="utf-8")

    with pytest.raises(ToolError, match=r"^missing frontmatter"):
        await MemoryReadTool(memory).run({"slug": "broken"}, ctx)


async def test_the_model_reads_the_tool_name_once_in_an_error(memory: Path, tmp_path: Path) -> None:
    # The runner puts the tool's name before every error; the tool must not add it again.
    runner = ToolRunner(
        registry=ToolRegistry([MemoryReadTool(memory), KnowledgeSearchTool(memory)]),
        fs=ScopedFS(tmp_path),
        workspace=tmp_path,
        scratch_dir=tmp_path / "scratch",
        cap_for=lambda name: 1000,
        interceptors=InterceptorChain(),
    )
    (memory / "knowledge" / "broken.md").write_text("no frontmatter\n", encoding="utf-8")
    committed: list[Item] = []
    calls = [
        ToolUseBlock(id="c1", name="memory_read", input={"slug": "deploi"}),
        ToolUseBlock(id="c2", name="memory_read", input={"slug": "broken"}),
    ]
    await runner.run_calls(calls, lambda item: committed.append(item) or item)
    summaries = {r.call_id: r.summary for r in committed if isinstance(r, ToolResult)}
    assert summaries == {
        "c1": "memory_read: no knowledge record 'deploi'; similar: deploy",
        "c2": "memory_read: missing frontmatter: the file must start with a '---' line",
    }
