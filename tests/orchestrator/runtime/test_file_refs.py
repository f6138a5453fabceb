"""Submit-time ``@file`` resolution and synthetic pre-reads, against real files."""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path

import pytest

from orchestrator.adapters.scoped_fs import (
    BinaryFile,
    NotFound,
    NotRegularFile,
    OutOfScope,
    ScopedFS,
    SymlinkEscape,
)
from orchestrator.capabilities.hooks.chain import InterceptorChain
from orchestrator.capabilities.tools import files
from orchestrator.capabilities.tools.base import ToolOutput
from orchestrator.capabilities.tools.files import ReadFileTool, read_file_output
from orchestrator.capabilities.tools.registry import ToolRegistry
from orchestrator.core.history import Item, SystemMessage, ToolResult, ToolUseBlock
from orchestrator.core.segments import (
    FileRefSegment,
    KnowledgeRefSegment,
    PasteSegment,
    Segment,
    TextSegment,
)
from orchestrator.core.tool_output import TOOL_OUTPUT_MAX_BYTES
from orchestrator.runtime import file_refs
from orchestrator.runtime.file_refs import (
    TRUNCATION_MARKER,
    FileRefError,
    PrereadResult,
    RefResolution,
    preread_files,
    resolve_file_ref,
    resolve_segments,
    synthetic_read_items,
)
from orchestrator.runtime.tool_runner import ToolRunner

CAP = TOOL_OUTPUT_MAX_BYTES


def refs(paths: list[str]) -> list[FileRefSegment]:
    """Whole-file refs, as a submit carries them."""
    return [FileRefSegment(path=p) for p in paths]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("import os\n\nprint(os.getcwd())\n")
    (root / "notes.md").write_text("one\ntwo")
    return root


@pytest.fixture
def fs(ws: Path) -> ScopedFS:
    return ScopedFS(ws)


def test_marker_wire_string() -> None:
    assert TRUNCATION_MARKER.format(total=20480) == (
        "[...truncated, 20480 bytes total — use read_file for the rest]"
    )


def test_resolve_file(fs: ScopedFS, ws: Path) -> None:
    ref = resolve_file_ref(fs, "src/app.py", max_bytes=CAP)
    assert ref.text == "[File: src/app.py]\nimport os\n\nprint(os.getcwd())\n"
    assert (ref.fs_path, ref.is_dir, ref.truncated) == (ws / "src" / "app.py", False, False)
    assert ref.to_item() == SystemMessage(text=ref.text, origin="file_ref")


def test_header_keeps_the_path_as_written(fs: ScopedFS) -> None:
    assert resolve_file_ref(fs, "./src/../notes.md", max_bytes=CAP).text == (
        "[File: ./src/../notes.md]\none\ntwo"
    )


def test_truncated_file_gets_the_marker_on_a_new_line(fs: ScopedFS, ws: Path) -> None:
    # 20 KB of 3-byte characters after one byte: the 16 KB cut splits a character.
    raw = ("x" + "é語" * 4096).encode()
    (ws / "big.txt").write_bytes(raw)
    ref = resolve_file_ref(fs, "big.txt", max_bytes=CAP)
    header, body = ref.text.split("\n", 1)
    content, marker = body.rsplit("\n", 1)
    assert header == "[File: big.txt]"
    assert marker == f"[...truncated, {len(raw)} bytes total — use read_file for the rest]"
    assert raw.startswith(content.encode()) and CAP - 3 < len(content.encode()) <= CAP
    assert ref.truncated and ref.total_bytes == len(raw)


def test_truncated_body_ending_in_newline_gets_no_blank_line(fs: ScopedFS, ws: Path) -> None:
    (ws / "lines.txt").write_text("abc\n" * 10)
    ref = resolve_file_ref(fs, "lines.txt", max_bytes=8)
    assert ref.text == "[File: lines.txt]\nabc\nabc\n" + TRUNCATION_MARKER.format(total=40)


def test_directory_gives_a_listing(fs: ScopedFS, ws: Path) -> None:
    (ws / "src" / "lib").mkdir()
    ref = resolve_file_ref(fs, "src", max_bytes=CAP)
    assert ref.text == "[Dir: src]\napp.py\nlib/"
    assert ref.is_dir


def test_empty_directory(fs: ScopedFS, ws: Path) -> None:
    (ws / "empty").mkdir()
    assert resolve_file_ref(fs, "empty/", max_bytes=CAP).text == "[Dir: empty/]\n(empty directory)"


def test_large_directory_is_capped(fs: ScopedFS, ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(file_refs, "DIR_LIST_LIMIT", 3)
    (ws / "many").mkdir()
    for i in range(5):
        (ws / "many" / f"{i}.txt").write_text("")
    assert resolve_file_ref(fs, "many", max_bytes=CAP).text == (
        "[Dir: many]\n0.txt\n1.txt\n2.txt\n[...truncated, 5 entries total]"
    )


@pytest.mark.parametrize(
    ("setup", "path", "kind", "reason"),
    [
        (None, "src/x.py", NotFound, "not found"),
        (None, "../outside.txt", OutOfScope, "outside the allowed roots"),
        ("link", "leak.txt", SymlinkEscape, "symlink points outside the allowed roots"),
        ("binary", "blob.bin", BinaryFile, "binary file (contains NUL bytes)"),
        ("fifo", "pipe", NotRegularFile, "not a regular file (FIFO)"),
    ],
)
def test_failures_carry_the_reason(
    fs: ScopedFS,
    ws: Path,
    setup: str | None,
    path: str,
    kind: type[Exception],
    reason: str,
) -> None:
    outside = ws.parent / "outside.txt"
    outside.write_text("no")
    if setup == "link":
        (ws / "leak.txt").symlink_to(outside)
    elif setup == "binary":
        (ws / "blob.bin").write_bytes(b"\x89PNG\x00\x00")
    elif setup == "fifo":
        os.mkfifo(ws / "pipe")
    with pytest.raises(FileRefError) as exc:
        resolve_file_ref(fs, path, max_bytes=CAP)
    assert isinstance(exc.value.cause, kind)
    assert exc.value.reason.startswith(reason)
    assert exc.value.alert_message == f"could not attach @{path}: {exc.value.reason}"
    assert exc.value.placeholder == f"[unresolved file ref: {path}]"


def test_not_found_alert_text(fs: ScopedFS) -> None:
    with pytest.raises(FileRefError) as exc:
        resolve_file_ref(fs, "src/x.py", max_bytes=CAP)
    assert exc.value.alert_message == "could not attach @src/x.py: not found"


def test_resolve_segments(fs: ScopedFS) -> None:
    segments: list[Segment] = [
        TextSegment(text="explain "),
        FileRefSegment(path="src/app.py"),
        TextSegment(text=" and "),
        FileRefSegment(path="src/x.py"),
        TextSegment(text=" with "),
        PasteSegment(id=1, text="pasted"),
        TextSegment(text=" and "),
        KnowledgeRefSegment(slug="style"),
        TextSegment(text=" then "),
        FileRefSegment(path="notes.md"),
    ]
    result = resolve_segments(fs, segments, max_bytes=CAP)
    assert result.user_text == (
        "explain @src/app.py and [unresolved file ref: src/x.py] with pasted and "
        "@knowledge:style then @notes.md"
    )
    assert result.items == [
        SystemMessage(
            text="[File: src/app.py]\nimport os\n\nprint(os.getcwd())\n", origin="file_ref"
        ),
        SystemMessage(text="[File: notes.md]\none\ntwo", origin="file_ref"),
    ]
    assert [f.alert_message for f in result.failures] == ["could not attach @src/x.py: not found"]


def test_resolve_segments_attaches_a_repeated_path_once(fs: ScopedFS) -> None:
    segments: list[Segment] = [
        FileRefSegment(path="notes.md"),
        TextSegment(text=" vs "),
        FileRefSegment(path="notes.md"),
        TextSegment(text=" "),
        FileRefSegment(path="gone"),
        FileRefSegment(path="gone"),
    ]
    result = resolve_segments(fs, segments, max_bytes=CAP)
    assert result.user_text == (
        "@notes.md vs @notes.md [unresolved file ref: gone][unresolved file ref: gone]"
    )
    assert len(result.items) == 1
    assert [f.path for f in result.failures] == ["gone"]


def test_resolve_segments_without_refs(fs: ScopedFS) -> None:
    result = resolve_segments(fs, [TextSegment(text="hello")], max_bytes=CAP)
    assert result == RefResolution(user_text="hello")


# -- synthetic reads ------------------------------------------------------------------------------


async def test_preread_formats_like_read_file(fs: ScopedFS) -> None:
    results = await preread_files(fs, refs(["src/app.py", "notes.md", "missing.py"]), max_bytes=CAP)
    assert [r.path for r in results] == ["src/app.py", "notes.md", "missing.py"]
    assert results[0].output == ToolOutput(
        summary="read_file: src/app.py — 3 lines",
        content="    1\timport os\n    2\t\n    3\tprint(os.getcwd())\n",
    )
    assert results[1].output == ToolOutput(
        summary="read_file: notes.md — 2 lines", content="    1\tone\n    2\ttwo\n"
    )
    assert not results[2].ok and results[2].output is None
    assert results[2].error is not None and results[2].error.reason == "not found"


async def _real_read(ws: Path, path: str, cap: int) -> ToolResult:
    """What the tool runner commits when the model itself calls read_file on ``path``."""
    runner = ToolRunner(
        registry=ToolRegistry([ReadFileTool(max_bytes=cap)]),
        fs=ScopedFS(ws),
        workspace=ws,
        scratch_dir=ws / ".pod" / "scratch",
        cap_for=lambda name: cap,
        interceptors=InterceptorChain(),
    )
    committed: list[Item] = []
    call = ToolUseBlock(id="toolu_1", name="read_file", input={"path": path})
    await runner.run_calls([call], lambda item: committed.append(item) or item)
    [result] = committed
    assert isinstance(result, ToolResult) and not result.is_error
    return result


@pytest.mark.parametrize("kind", ["small", "crlf", "large", "huge line", "empty", "cut"])
@pytest.mark.parametrize("cap", [CAP, 4096])
async def test_preread_is_exactly_what_a_real_read_file_returns(
    fs: ScopedFS, ws: Path, monkeypatch: pytest.MonkeyPatch, kind: str, cap: int
) -> None:
    path = f"{kind.replace(' ', '_')}.txt"
    match kind:
        case "small":
            (ws / path).write_text("alpha\n\tbeta\ngamma")
        case "crlf":
            (ws / path).write_bytes(b"one\r\ntwo\r\n\r\nthree\r\n")
        case "large":
            (ws / path).write_text("".join(f"row {n},value\n" for n in range(1, 20_001)))
        case "huge line":
            (ws / path).write_text("x" * 50_000 + "\nend\n")
        case "empty":
            (ws / path).write_text("")
        case "cut":
            # Past read_file's own load limit: both say only the start could be read.
            monkeypatch.setattr(files, "READ_MAX_BYTES", 1000)
            (ws / path).write_text("abc\n" * 1000)
    [synthetic] = await preread_files(fs, refs([path]), max_bytes=cap)
    real = await _real_read(ws, path, cap)
    assert synthetic.output is not None
    assert (synthetic.output.summary, synthetic.output.content) == (real.summary, real.content)
    if kind == "large":
        assert real.content is not None and "not shown: the file (20000 lines" in real.content
        assert len(real.content.encode()) <= cap


async def test_preread_directory_lists_it(fs: ScopedFS) -> None:
    [src] = await preread_files(fs, refs(["src"]), max_bytes=12)
    assert src.output == ToolOutput(summary="read_file: src — directory, 1 entry", content="app.py")


async def test_preread_caps_and_dedupes(fs: ScopedFS) -> None:
    paths = ["notes.md", "notes.md", *(f"f{i}.py" for i in range(10))]
    results = await preread_files(fs, refs(paths), max_bytes=CAP)
    assert [r.path for r in results] == ["notes.md", "f0.py", "f1.py", "f2.py", "f3.py"]
    assert len(await preread_files(fs, refs(paths), max_bytes=CAP, max_files=2)) == 2


async def test_preread_runs_in_parallel(fs: ScopedFS, monkeypatch: pytest.MonkeyPatch) -> None:
    # Every read waits for all the others: only parallel reads get past the barrier.
    barrier = threading.Barrier(3, timeout=5)

    def waiting_read(
        _fs: ScopedFS, path: str, *, max_bytes: int, lines: object = None
    ) -> PrereadResult:
        barrier.wait()
        return PrereadResult(path, output=ToolOutput(summary=path))

    monkeypatch.setattr(file_refs, "preread_one", waiting_read)
    results = await preread_files(fs, refs(["a.py", "b.py", "c.py"]), max_bytes=CAP)
    assert [r.output.summary for r in results if r.output] == ["a.py", "b.py", "c.py"]


async def test_preread_is_cancellable(fs: ScopedFS, monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()
    started = threading.Event()

    def stuck_read(
        _fs: ScopedFS, path: str, *, max_bytes: int, lines: object = None
    ) -> PrereadResult:
        started.set()
        release.wait(10)
        return PrereadResult(path)

    monkeypatch.setattr(file_refs, "preread_one", stuck_read)
    task = asyncio.create_task(preread_files(fs, refs(["a.py", "b.py"]), max_bytes=CAP))
    await asyncio.to_thread(started.wait, 5)
    task.cancel()
    try:
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, timeout=5)
    finally:
        release.set()


# -- line ranges ----------------------------------------------------------------------------------


@pytest.fixture
def long_file(ws: Path) -> str:
    (ws / "long.py").write_text("".join(f"line {n}\n" for n in range(1, 101)))
    return "long.py"


def test_a_ranged_ref_attaches_those_lines_numbered(fs: ScopedFS, long_file: str) -> None:
    ref = resolve_file_ref(fs, long_file, max_bytes=CAP, lines=(10, 12))
    assert ref.path == "long.py:L10-L12"
    header, *body = ref.text.splitlines()
    assert header == "[File: long.py (lines 10-12)]"
    assert [row.split("\t", 1)[1] if "\t" in row else row for row in body] == [
        "line 10",
        "line 11",
        "line 12",
    ]
    assert all(row.lstrip().startswith(str(n)) for n, row in zip(range(10, 13), body, strict=True))


def test_a_one_line_ref_and_a_range_past_the_end(fs: ScopedFS, long_file: str) -> None:
    one = resolve_file_ref(fs, long_file, max_bytes=CAP, lines=(7, 7))
    assert one.text.splitlines()[0] == "[File: long.py (line 7)]" and "line 7" in one.text
    tail = resolve_file_ref(fs, long_file, max_bytes=CAP, lines=(99, 500))
    assert "line 100" in tail.text and "line 98" not in tail.text
    with pytest.raises(FileRefError) as past:
        resolve_file_ref(fs, long_file, max_bytes=CAP, lines=(101, 120))
    assert past.value.alert_message.startswith("could not attach @long.py:L101-L120: offset 101")


def test_a_range_on_a_directory_is_refused(fs: ScopedFS) -> None:
    with pytest.raises(FileRefError, match="needs a file, not a directory"):
        resolve_file_ref(fs, "src", max_bytes=CAP, lines=(1, 2))


def test_the_same_file_in_two_ranges_is_attached_twice(fs: ScopedFS, long_file: str) -> None:
    segments: list[Segment] = [
        FileRefSegment(path=long_file, start_line=1, end_line=2),
        TextSegment(text=" vs "),
        FileRefSegment(path=long_file, start_line=50, end_line=50),
        FileRefSegment(path=long_file, start_line=1, end_line=2),
    ]
    resolution = resolve_segments(fs, segments, max_bytes=CAP)
    assert resolution.user_text == "@long.py:L1-L2 vs @long.py:L50@long.py:L1-L2"
    assert [item.text.splitlines()[0] for item in resolution.items] == [
        "[File: long.py (lines 1-2)]",
        "[File: long.py (line 50)]",
    ]


async def test_a_ranged_synthetic_read_is_a_read_file_call_with_offset_and_limit(
    fs: ScopedFS, long_file: str
) -> None:
    [result] = await preread_files(
        fs, [FileRefSegment(path=long_file, start_line=20, end_line=29)], max_bytes=CAP
    )
    items, failures = synthetic_read_items([result], turn=3)
    assert failures == []
    call = items[0].blocks[0]  # type: ignore[union-attr]
    assert call.input == {"path": "long.py", "offset": 20, "limit": 10}
    # Exactly what the tool returns for that call.
    real = read_file_output(fs, "long.py", max_bytes=CAP, offset=20, limit=10)
    assert (items[1].summary, items[1].content) == (real.summary, real.content)  # type: ignore[union-attr]


# -- images ---------------------------------------------------------------------------------------


def _png(size: tuple[int, int] = (40, 30)) -> bytes:
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", size, (1, 2, 3)).save(buffer, format="PNG")
    return buffer.getvalue()


def test_an_image_ref_attaches_an_image_that_survives_the_session_file(
    fs: ScopedFS, ws: Path
) -> None:
    from orchestrator.core.history import item_from_json, item_to_json
    from orchestrator.core.wire import to_wire

    (ws / "shot.PNG").write_bytes(_png())
    item = resolve_file_ref(fs, "shot.PNG", max_bytes=CAP).to_item()
    assert item.text == "[Image: shot.PNG]" and item.image is not None
    assert item_from_json(item_to_json(item)) == item
    [message] = to_wire([item])
    assert [b["type"] for b in message["content"]] == ["text", "image"]
    # A text-only item keeps its JSON as it was before images existed.
    assert "image" not in item_to_json(SystemMessage(text="note"))


def test_a_file_named_like_an_image_that_is_text_is_read_as_text(fs: ScopedFS, ws: Path) -> None:
    (ws / "fake.png").write_text("just words\n")
    ref = resolve_file_ref(fs, "fake.png", max_bytes=CAP)
    assert ref.image is None and ref.text == "[File: fake.png]\njust words\n"


def test_an_image_over_the_api_limit_is_refused_with_its_size(
    fs: ScopedFS, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(file_refs, "IMAGE_MAX_BYTES", 100)
    (ws / "big.png").write_bytes(_png((300, 300)))
    with pytest.raises(FileRefError, match=r"image too large \(0\.0 MiB; the API takes at most"):
        resolve_file_ref(fs, "big.png", max_bytes=CAP)


def test_the_synthetic_read_style_attaches_images_at_once(ws: Path) -> None:
    from orchestrator.config.model import PodConfig
    from orchestrator.runtime.submit import resolve_submission

    (ws / "shot.png").write_bytes(_png())
    config = PodConfig(workspace=ws, file_ref_style="synthetic_read")
    segments: list[Segment] = [FileRefSegment(path="shot.png"), FileRefSegment(path="notes.md")]
    sub = resolve_submission(segments, fs=ScopedFS(ws), config=config)
    assert [ref.path for ref in sub.preread] == ["notes.md"]
    assert [(i.text, i.image is not None) for i in sub.attach] == [("[Image: shot.png]", True)]  # type: ignore[union-attr]
