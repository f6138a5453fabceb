"""The Read call a preread system message stands for, parsed from what file_refs.py writes."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.adapters.scoped_fs import ScopedFS
from orchestrator.core.preread import PrereadCall, preread_call
from orchestrator.runtime.file_refs import preread_one, resolve_file_ref


@pytest.fixture
def fs(workspace: Path) -> ScopedFS:
    (workspace / "big.txt").write_text("".join(f"line {n}\n" for n in range(1, 2001)))
    (workspace / "empty").mkdir()
    (workspace / "odd (lines 1-2).py").write_text("x\n")
    (workspace / "pic.png").write_bytes(
        bytes.fromhex("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489")
        + bytes.fromhex("0000000a49444154789c6300010000050001")
        + bytes.fromhex("0d0a2db40000000049454e44ae426082")
    )
    return ScopedFS(workspace)


def call_for(
    fs: ScopedFS, path: str, lines: tuple[int, int] | None = None, seq: int = 7
) -> PrereadCall:
    text = resolve_file_ref(fs, path, max_bytes=1000, lines=lines).text
    call = preread_call(text, seq=seq)
    assert call is not None, text
    return call


def test_a_whole_file_reads_as_the_synthetic_read_would_summarise_it(fs: ScopedFS) -> None:
    call = call_for(fs, "src/app.py")
    synthetic = preread_one(fs, "src/app.py", max_bytes=1000).output
    assert synthetic is not None
    assert (call.name, call.arguments, call.call_id) == (
        "read_file",
        {"path": "src/app.py"},
        "preread_7",
    )
    assert call.summary == synthetic.summary == "read_file: src/app.py — 2 lines"
    assert call.content == "def main():\n    return 42\n"


def test_a_line_range_becomes_offset_and_limit(fs: ScopedFS) -> None:
    call = call_for(fs, "big.txt", lines=(10, 12))
    assert call.arguments == {"path": "big.txt", "offset": 10, "limit": 3}
    assert call.summary == "read_file: big.txt — lines 10-12"
    assert call.content is not None and "line 11" in call.content
    one = call_for(fs, "big.txt", lines=(5, 5))
    assert one.arguments == {"path": "big.txt", "offset": 5, "limit": 1}
    assert one.summary == "read_file: big.txt — line 5"


def test_a_capped_file_says_how_much_was_shown(fs: ScopedFS) -> None:
    call = call_for(fs, "big.txt")
    assert call.summary.startswith("read_file: big.txt — first ")
    assert call.summary.endswith(f"lines of {(fs.workspace / 'big.txt').stat().st_size:,} bytes")


def test_directories_and_images(fs: ScopedFS) -> None:
    assert call_for(fs, "src").summary == "read_file: src — directory, 1 entry"
    assert call_for(fs, "empty").summary == "read_file: empty — directory, 0 entries"
    image = call_for(fs, "pic.png")
    assert image.summary == "read_file: pic.png — image" and image.content is None


def test_a_path_that_looks_like_a_range_is_still_its_path(fs: ScopedFS) -> None:
    call = call_for(fs, "odd (lines 1-2).py")
    assert call.arguments == {"path": "odd (lines 1-2).py"}


@pytest.mark.parametrize("text", ["", "hello", "[File: ]\nx", "[Note: a.py]\nx", "x\n[File: a]"])
def test_text_without_a_file_header_is_no_call(text: str) -> None:
    assert preread_call(text, seq=1) is None
