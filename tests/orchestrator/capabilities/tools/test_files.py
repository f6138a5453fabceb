"""read_file, write_file and edit_file against real files in a temporary workspace."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from orchestrator.adapters.scoped_fs import ScopedFS
from orchestrator.capabilities.tools.base import ToolContext, ToolError, ToolOutput
from orchestrator.capabilities.tools.files import EditFileTool, ReadFileTool, WriteFileTool


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return workspace


@pytest.fixture
def ctx(ws: Path) -> ToolContext:
    return ToolContext(fs=ScopedFS(ws), workspace=ws, scratch_dir=ws / ".pod" / "scratch")


# -- read_file --------------------------------------------------------------------------------


async def test_read_whole_file_numbers_lines(ws: Path, ctx: ToolContext) -> None:
    (ws / "src").mkdir()
    (ws / "src" / "a.py").write_text("import os\n\nprint(os.sep)\n")
    output = await ReadFileTool().run({"path": "src/a.py"}, ctx)
    assert output == ToolOutput(
        summary="read_file: src/a.py — 3 lines",
        content="    1\timport os\n    2\t\n    3\tprint(os.sep)\n",
    )


async def test_read_range_with_offset_and_limit(ws: Path, ctx: ToolContext) -> None:
    (ws / "f.txt").write_text("".join(f"line {n}\n" for n in range(1, 101)))
    output = await ReadFileTool().run({"path": "f.txt", "offset": 10, "limit": 3}, ctx)
    assert output == ToolOutput(
        summary="read_file: f.txt — 100 lines (showing 10-12)",
        content="   10\tline 10\n   11\tline 11\n   12\tline 12\n",
    )


async def test_read_limit_past_the_end_stops_at_the_last_line(ws: Path, ctx: ToolContext) -> None:
    (ws / "f.txt").write_text("a\nb\nc")
    output = await ReadFileTool().run({"path": "f.txt", "offset": 2, "limit": 50}, ctx)
    assert output == ToolOutput(
        summary="read_file: f.txt — 3 lines (showing 2-3)", content="    2\tb\n    3\tc\n"
    )


async def test_read_offset_past_the_end_is_an_error(ws: Path, ctx: ToolContext) -> None:
    (ws / "f.txt").write_text("a\nb\n")
    with pytest.raises(ToolError, match=r"offset 5 is past the end of f.txt \(2 lines\)"):
        await ReadFileTool().run({"path": "f.txt", "offset": 5}, ctx)


async def test_read_crlf_file_shows_lines_without_carriage_returns(
    ws: Path, ctx: ToolContext
) -> None:
    (ws / "w.txt").write_bytes(b"one\r\ntwo\r\n")
    output = await ReadFileTool().run({"path": "w.txt"}, ctx)
    assert output.content == "    1\tone\n    2\ttwo\n"


async def test_read_empty_file(ws: Path, ctx: ToolContext) -> None:
    (ws / "empty").write_text("")
    output = await ReadFileTool().run({"path": "empty"}, ctx)
    assert output == ToolOutput(summary="read_file: empty — 0 lines (empty)")


async def test_read_huge_file_returns_head_and_tail(ws: Path, ctx: ToolContext) -> None:
    (ws / "data.csv").write_text("".join(f"row {n},value\n" for n in range(1, 50_001)))
    output = await ReadFileTool(max_bytes=4096).run({"path": "data.csv"}, ctx)
    assert output.content is not None
    assert len(output.content.encode()) <= 4096
    found = re.fullmatch(
        r"read_file: data\.csv — 50000 lines \(showing 1-(\d+) and (\d+)-50000\)", output.summary
    )
    assert found is not None
    head_last, tail_first = int(found[1]), int(found[2])
    assert 10 < head_last < tail_first - 1000
    lines = output.content.splitlines()
    assert lines[0] == "    1\trow 1,value"
    assert lines[head_last - 1] == f"{head_last:>5}\trow {head_last},value"
    assert lines[head_last] == (
        f"… lines {head_last + 1}-{tail_first - 1} not shown: the file (50000 lines, "
        f"{(ws / 'data.csv').stat().st_size} bytes) is too large to read whole. Read a range "
        f"with offset and limit (e.g. offset={head_last + 1}, limit=200) or search it with grep. …"
    )
    assert lines[head_last + 1] == f"{tail_first:>5}\trow {tail_first},value"
    assert lines[-1] == "50000\trow 50000,value"
    assert len(lines) == head_last + 1 + (50_000 - tail_first + 1)


async def test_read_huge_file_with_a_range_reads_just_that(ws: Path, ctx: ToolContext) -> None:
    (ws / "data.csv").write_text("".join(f"row {n}\n" for n in range(1, 50_001)))
    output = await ReadFileTool(max_bytes=4096).run(
        {"path": "data.csv", "offset": 30_000, "limit": 2}, ctx
    )
    assert output.content == "30000\trow 30000\n30001\trow 30001\n"


async def test_read_one_huge_line_is_shortened(ws: Path, ctx: ToolContext) -> None:
    (ws / "min.js").write_text("x" * 100_000)
    output = await ReadFileTool(max_bytes=4096).run({"path": "min.js"}, ctx)
    assert output.summary == "read_file: min.js — 1 lines"
    assert output.content == (
        f"    1\t{'x' * 400}… [100000 chars]\n[lines longer than 400 characters are shortened]\n"
    )


@pytest.mark.parametrize(
    ("setup", "path", "message"),
    [
        (None, "missing.txt", "missing.txt: not found"),
        ("dir", "sub", "sub: is a directory"),
        ("binary", "blob.bin", "blob.bin: binary file"),
        (None, "../outside.txt", "../outside.txt: outside the allowed roots"),
    ],
)
async def test_read_fs_errors_become_tool_errors(
    ws: Path, ctx: ToolContext, setup: str | None, path: str, message: str
) -> None:
    if setup == "dir":
        (ws / "sub").mkdir()
    elif setup == "binary":
        (ws / "blob.bin").write_bytes(b"\x00\x01\x02")
    (ws.parent / "outside.txt").write_text("secret")
    with pytest.raises(ToolError, match=re.escape(message)):
        await ReadFileTool().run({"path": path}, ctx)


async def test_read_takes_whole_numbers_written_as_floats(ws: Path, ctx: ToolContext) -> None:
    (ws / "f.txt").write_text("a\nb\nc\n")
    output = await ReadFileTool().run({"path": "f.txt", "offset": 2.0, "limit": 1.0}, ctx)
    assert output == ToolOutput(
        summary="read_file: f.txt — 3 lines (showing 2-2)", content="    2\tb\n"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({}, "missing required argument 'path'"),
        ({"path": "f", "offset": 1.5}, "argument 'offset' must be an integer, got 1.5"),
        (
            {"path": "f", "lines": 3},
            "unknown argument 'lines'; the arguments are: path, offset, limit",
        ),
        ({"path": 3}, "argument 'path' must be a string, got int"),
        ({"path": "f", "offset": 0}, "argument 'offset' must be at least 1, got 0"),
        ({"path": "f", "limit": "ten"}, "argument 'limit' must be an integer, got 'ten'"),
        ({"path": "f", "limit": True}, "argument 'limit' must be an integer, got True"),
    ],
)
async def test_read_bad_arguments(ctx: ToolContext, args: dict[str, object], message: str) -> None:
    with pytest.raises(ToolError, match=re.escape(message)):
        await ReadFileTool().run(dict(args), ctx)


# -- write_file -------------------------------------------------------------------------------


async def test_write_creates_parents_and_counts_bytes(ws: Path, ctx: ToolContext) -> None:
    output = await WriteFileTool().run({"path": "a/b/c.txt", "content": "héllo\n"}, ctx)
    assert output == ToolOutput(summary="write_file: a/b/c.txt — 7 bytes")
    assert (ws / "a" / "b" / "c.txt").read_text() == "héllo\n"


async def test_write_overwrites(ws: Path, ctx: ToolContext) -> None:
    (ws / "f").write_text("old content")
    await WriteFileTool().run({"path": "f", "content": "new"}, ctx)
    assert (ws / "f").read_text() == "new"


async def test_write_outside_scope_is_refused(ws: Path, ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match="outside the allowed roots"):
        await WriteFileTool().run({"path": "../escape.txt", "content": "x"}, ctx)
    assert not (ws.parent / "escape.txt").exists()


async def test_write_requires_content(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match="missing required argument 'content'"):
        await WriteFileTool().run({"path": "f"}, ctx)


# -- edit_file --------------------------------------------------------------------------------


async def test_edit_replaces_once_and_shows_the_region(ws: Path, ctx: ToolContext) -> None:
    (ws / "m.py").write_text("".join(f"line{n}\n" for n in range(1, 11)))
    output = await EditFileTool().run(
        {"path": "m.py", "old_string": "line5\n", "new_string": "five\nFIVE\n"}, ctx
    )
    assert output.summary == "edit_file: m.py — replaced 1 occurrence"
    assert output.content == (
        "    2\tline2\n    3\tline3\n    4\tline4\n    5\tfive\n    6\tFIVE\n"
        "    7\tline6\n    8\tline7\n    9\tline8\n"
    )
    assert (ws / "m.py").read_text().count("five\nFIVE\n") == 1


async def test_edit_missing_string_is_an_error(ws: Path, ctx: ToolContext) -> None:
    (ws / "m.py").write_text("abc\n")
    with pytest.raises(ToolError, match=r"old_string not found in m\.py"):
        await EditFileTool().run({"path": "m.py", "old_string": "xyz", "new_string": "q"}, ctx)


async def test_edit_ambiguous_string_is_an_error_with_the_count(ws: Path, ctx: ToolContext) -> None:
    (ws / "m.py").write_text("x = 1\nx = 1\nx = 1\n")
    with pytest.raises(ToolError, match=r"old_string occurs 3 times in m\.py"):
        await EditFileTool().run({"path": "m.py", "old_string": "x = 1", "new_string": "y"}, ctx)
    assert (ws / "m.py").read_text() == "x = 1\nx = 1\nx = 1\n"


async def test_edit_replace_all(ws: Path, ctx: ToolContext) -> None:
    (ws / "m.py").write_text("x = 1\nx = 1\nx = 1\n")
    output = await EditFileTool().run(
        {"path": "m.py", "old_string": "x", "new_string": "y", "replace_all": True}, ctx
    )
    assert output.summary == "edit_file: m.py — replaced 3 occurrences"
    assert (ws / "m.py").read_text() == "y = 1\ny = 1\ny = 1\n"


async def test_edit_matches_crlf_files_with_plain_newlines(ws: Path, ctx: ToolContext) -> None:
    (ws / "w.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    await EditFileTool().run({"path": "w.txt", "old_string": "one\ntwo", "new_string": "1\n2"}, ctx)
    assert (ws / "w.txt").read_bytes() == b"1\r\n2\r\nthree\r\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"old_string": "", "new_string": "x"}, "old_string is empty"),
        ({"old_string": "a", "new_string": "a"}, "identical"),
        ({"old_string": "a", "new_string": "b", "replace_all": "yes"}, "true or false"),
    ],
)
async def test_edit_bad_arguments(
    ws: Path, ctx: ToolContext, args: dict[str, object], message: str
) -> None:
    (ws / "m.py").write_text("a\n")
    with pytest.raises(ToolError, match=message):
        await EditFileTool().run({"path": "m.py", **args}, ctx)
    assert (ws / "m.py").read_text() == "a\n"


async def test_edit_outside_scope_is_refused(ws: Path, ctx: ToolContext) -> None:
    (ws.parent / "other.txt").write_text("a")
    with pytest.raises(ToolError, match="outside the allowed roots"):
        await EditFileTool().run(
            {"path": str(ws.parent / "other.txt"), "old_string": "a", "new_string": "b"}, ctx
        )
    assert (ws.parent / "other.txt").read_text() == "a"
