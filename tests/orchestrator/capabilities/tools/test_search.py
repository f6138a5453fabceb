"""glob and grep over a real directory tree, including the saved-result map."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from orchestrator.adapters.scoped_fs import ScopedFS
from orchestrator.capabilities.tools.base import ToolContext, ToolError, ToolOutput
from orchestrator.capabilities.tools.search import GlobTool, GrepTool, glob_to_regex


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    files = {
        ".gitignore": "build/\n*.log\n",
        "README.md": "# Project\nTODO: write docs\n",
        "src/app.py": "import os\n# TODO: fix\nprint('todo later')\n",
        "src/util.py": "def helper():\n    return 1\n",
        "src/web/index.ts": "// TODO ts\n",
        "src/web/view.tsx": "export {}\n",
        "build/out.py": "# TODO generated\n",
        "debug.log": "TODO in a log\n",
        ".hidden/secret.py": "# TODO hidden\n",
        ".git/config": "TODO in git\n",
    }
    for name, text in files.items():
        path = workspace / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (workspace / "src" / "blob.bin").write_bytes(b"TODO\x00\x01")
    return workspace


@pytest.fixture
def ctx(ws: Path) -> ToolContext:
    return ToolContext(fs=ScopedFS(ws), workspace=ws, scratch_dir=ws / ".pod" / "scratch")


# -- glob -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "matches"),
    [
        ("*.py", False),
        ("**/*.py", True),
        ("src/*.py", True),
        ("src/**/*.py", True),
        ("**/*.{py,ts}", True),
    ],
)
def test_glob_to_regex(pattern: str, matches: bool) -> None:
    assert glob_to_regex(pattern).matches("src/app.py") is matches


async def test_glob_lists_sorted_skipping_hidden_and_ignored(ctx: ToolContext) -> None:
    output = await GlobTool().run({"pattern": "**/*.py"}, ctx)
    assert output == ToolOutput(
        summary="glob: **/*.py — 2 matches", content="src/app.py\nsrc/util.py\n"
    )


async def test_glob_lists_directories_with_a_slash(ctx: ToolContext) -> None:
    output = await GlobTool().run({"pattern": "*"}, ctx)
    assert output.content == "README.md\nsrc/\n"


async def test_glob_braces_and_path(ctx: ToolContext) -> None:
    output = await GlobTool().run({"pattern": "**/*.{ts,tsx}", "path": "src"}, ctx)
    assert output == ToolOutput(
        summary="glob: **/*.{ts,tsx} in src — 2 matches",
        content="src/web/index.ts\nsrc/web/view.tsx\n",
    )


async def test_glob_caps_the_list_but_counts_everything(ws: Path, ctx: ToolContext) -> None:
    for n in range(10):
        (ws / "src" / f"gen_{n}.py").write_text("")
    output = await GlobTool(max_shown=3).run({"pattern": "src/gen_*.py"}, ctx)
    assert output == ToolOutput(
        summary="glob: src/gen_*.py — 10 matches (showing first 3)",
        content="src/gen_0.py\nsrc/gen_1.py\nsrc/gen_2.py\n[7 more; narrow the pattern or path]\n",
    )


async def test_glob_no_matches_is_summary_only(ctx: ToolContext) -> None:
    output = await GlobTool().run({"pattern": "**/*.rs"}, ctx)
    assert output == ToolOutput(summary="glob: **/*.rs — no matches")


async def test_glob_survives_a_symlink_loop(ws: Path, ctx: ToolContext) -> None:
    (ws / "src" / "loop").symlink_to(ws / "src")
    output = await GlobTool().run({"pattern": "**/util.py"}, ctx)
    # The linked directory is the same real directory: listed once, under its first name.
    assert output == ToolOutput(summary="glob: **/util.py — 1 match", content="src/util.py\n")


async def test_glob_errors(ws: Path, ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match="not a directory"):
        await GlobTool().run({"pattern": "*", "path": "README.md"}, ctx)
    with pytest.raises(ToolError, match="outside the allowed roots"):
        await GlobTool().run({"pattern": "*", "path": ".."}, ctx)
    with pytest.raises(ToolError, match="unbalanced"):
        await GlobTool().run({"pattern": "{a,b"}, ctx)


# -- grep -------------------------------------------------------------------------------------


async def test_grep_finds_lines_skipping_hidden_ignored_and_binary(ctx: ToolContext) -> None:
    output = await GrepTool().run({"pattern": "TODO"}, ctx)
    assert output == ToolOutput(
        summary="grep: TODO — 3 hits in 3 files",
        content=(
            "README.md:2:TODO: write docs\n"
            "src/app.py:2:# TODO: fix\n"
            "src/web/index.ts:1:// TODO ts\n"
            "[1 binary files skipped]\n"
        ),
    )


async def test_grep_case_insensitive_with_name_glob(ctx: ToolContext) -> None:
    output = await GrepTool().run(
        {"pattern": "todo", "glob": "*.py", "case_insensitive": True}, ctx
    )
    assert output == ToolOutput(
        summary="grep: todo — 2 hits in 1 file",
        content="src/app.py:2:# TODO: fix\nsrc/app.py:3:print('todo later')\n",
    )


@pytest.mark.parametrize("glob", ["src/web/*", "web/*", "**/*.ts"])
async def test_grep_path_glob_and_directory(ctx: ToolContext, glob: str) -> None:
    output = await GrepTool().run({"pattern": "TODO", "path": "src", "glob": glob}, ctx)
    assert output == ToolOutput(
        summary="grep: TODO in src — 1 hit in 1 file", content="src/web/index.ts:1:// TODO ts\n"
    )


async def test_grep_one_file(ctx: ToolContext) -> None:
    output = await GrepTool().run({"pattern": r"^\s+return", "path": "src/util.py"}, ctx)
    assert output == ToolOutput(
        summary="grep: ^\\s+return in src/util.py — 1 hit in 1 file",
        content="src/util.py:2:    return 1\n",
    )


async def test_grep_no_matches(ctx: ToolContext) -> None:
    output = await GrepTool().run({"pattern": "nowhere", "glob": "*.md"}, ctx)
    assert output == ToolOutput(summary="grep: nowhere — no matches in 1 file")


async def test_grep_invalid_regex(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match=r"invalid regular expression '\('"):
        await GrepTool().run({"pattern": "("}, ctx)


async def test_grep_huge_result_is_saved_and_mapped(ws: Path, ctx: ToolContext) -> None:
    (ws / "many").mkdir()
    (ws / "many" / "a.txt").write_text("hit\n" * 150)
    (ws / "many" / "b.txt").write_text("miss\nhit\n" * 100)
    (ws / "many" / "c.txt").write_text("hit\n")
    output = await GrepTool().run({"pattern": "hit", "path": "many"}, ctx)

    found = re.fullmatch(
        r"grep: hit in many — 251 hits in 3 files, saved to (\.pod/scratch/grep-\w+\.txt)",
        output.summary,
    )
    assert found is not None, output.summary
    saved = (ws / found[1]).read_text().splitlines()
    assert len(saved) == 251
    assert saved[0] == "many/a.txt:1:hit"
    assert saved[150] == "many/b.txt:2:hit"
    assert saved[-1] == "many/c.txt:1:hit"

    assert output.content is not None
    content = output.content.splitlines()
    assert content[0].startswith("251 hits in 3 files — too many to show here. The full result")
    assert f"saved to {found[1]}: read it with read_file" in content[0]
    start = content.index("Hits per file:") + 1
    per_file = content[start : content.index("", start)]
    assert per_file == ["   150  many/a.txt", "   100  many/b.txt", "     1  many/c.txt"]
    assert content[-20:] == [f"many/a.txt:{n}:hit" for n in range(1, 21)]


async def test_grep_result_over_the_byte_cap_is_saved(ws: Path, ctx: ToolContext) -> None:
    (ws / "wide.txt").write_text(("needle " + "x" * 200 + "\n") * 5)
    output = await GrepTool(max_bytes=500).run({"pattern": "needle", "path": "wide.txt"}, ctx)
    assert "5 hits in 1 file, saved to .pod/scratch/grep-" in output.summary
    saved = list((ws / ".pod" / "scratch").iterdir())
    assert len(saved) == 1
    assert len(saved[0].read_text().splitlines()) == 5


async def test_grep_on_one_unsearchable_file_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "blob.bin").write_bytes(b"\x00\x01binary")
    os.mkfifo(tmp_path / "pipe")
    ctx = ToolContext(fs=ScopedFS(tmp_path), workspace=tmp_path, scratch_dir=tmp_path / ".s")
    with pytest.raises(ToolError, match="cannot search binary file"):
        await GrepTool().run({"pattern": "x", "path": "blob.bin"}, ctx)
    with pytest.raises(ToolError, match=r"cannot search pipe \(.*regular file"):
        await GrepTool().run({"pattern": "x", "path": "pipe"}, ctx)


@pytest.mark.parametrize(
    ("pattern", "named"),
    [(r"(TODO)\1", "backreferences"), (r"TODO(?=:)", "lookahead"), (r"(?<=# )TODO", "lookbehind")],
)
async def test_grep_refuses_what_re2_cannot_do_and_says_what_to_write(
    ctx: ToolContext, pattern: str, named: str
) -> None:
    with pytest.raises(ToolError) as caught:
        await GrepTool().run({"pattern": pattern}, ctx)
    message = str(caught.value)
    assert message.startswith(f"unsupported regular expression {pattern!r}: {named}"), message
    assert "grep a wider pattern" in message
