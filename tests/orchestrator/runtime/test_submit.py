"""Submit resolution as data: text for the model, items to attach, reads for later, alerts."""

from __future__ import annotations

from pathlib import Path

from orchestrator.adapters.scoped_fs import ScopedFS
from orchestrator.config.model import PodConfig
from orchestrator.core.history import SystemMessage
from orchestrator.core.segments import (
    FileRefSegment,
    KnowledgeRefSegment,
    PasteSegment,
    TextSegment,
    UnknownSegment,
    WorkflowInvokeSegment,
)
from orchestrator.runtime.submit import Alert, resolve_submission, run_segments


def _knowledge(workspace: Path) -> None:
    (workspace / "knowledge").mkdir()
    (workspace / "knowledge" / "deploy.md").write_text("---\ndescription: d\n---\nsteps\n")


def test_system_message_style_attaches_bodies_and_marks_failures(workspace: Path) -> None:
    _knowledge(workspace)
    config = PodConfig(workspace=workspace)
    segments = [
        TextSegment(text="see "),
        FileRefSegment(path="src/app.py"),
        FileRefSegment(path="gone.py"),
        KnowledgeRefSegment(slug="deploy"),
    ]
    sub = resolve_submission(segments, fs=ScopedFS(workspace), config=config)
    assert sub.text == "see @src/app.py[unresolved file ref: gone.py]@knowledge:deploy"
    assert [i.text for i in sub.attach if isinstance(i, SystemMessage)] == [
        "[File: src/app.py]\ndef main():\n    return 42\n",
        "[Knowledge: deploy]\nsteps",
    ]
    assert sub.preread == []
    assert sub.alerts == [Alert("warn", "file_ref", "could not attach @gone.py: not found")]
    assert sub.message().text == sub.text and sub.message().segments == segments


def test_synthetic_read_style_defers_files_but_attaches_knowledge(workspace: Path) -> None:
    _knowledge(workspace)
    config = PodConfig(workspace=workspace, file_ref_style="synthetic_read")
    segments = [FileRefSegment(path="README.md"), KnowledgeRefSegment(slug="deploy")]
    sub = resolve_submission(segments, fs=ScopedFS(workspace), config=config)
    assert sub.text == "@README.md@knowledge:deploy"
    assert sub.preread == [FileRefSegment(path="README.md")]
    assert [i.text for i in sub.attach if isinstance(i, SystemMessage)] == [
        "[Knowledge: deploy]\nsteps"
    ]


def test_segments_the_pod_cannot_take_are_reported(workspace: Path) -> None:
    config = PodConfig(workspace=workspace)
    segments = [UnknownSegment(kind="sticker"), WorkflowInvokeSegment(slug="release")]
    sub = resolve_submission(segments, fs=ScopedFS(workspace), config=config)
    assert [a.message for a in sub.alerts] == [
        "segment kind 'sticker' is not supported by this pod; the model sees a placeholder",
        "no command named /release; sent as typed",
    ]
    off = PodConfig(workspace=workspace, memory={"enabled": False})
    sub = resolve_submission([KnowledgeRefSegment(slug="x")], fs=ScopedFS(workspace), config=off)
    assert sub.attach == [] and sub.alerts[0].source == "knowledge_ref"


def test_text_segments_are_scanned_for_mentions_pastes_are_not(workspace: Path) -> None:
    # One rule for every client: plain ``input`` arrives as one text segment, the UI's typed
    # text as text segments between its chips; both attach the same files.
    fs = ScopedFS(workspace)
    typed = [TextSegment(text="explain @src/app.py")]
    assert run_segments(typed, exists=fs.exists) == [
        TextSegment(text="explain "),
        FileRefSegment(path="src/app.py"),
    ]
    chips = [
        TextSegment(text="compare "),
        FileRefSegment(path="README.md"),
        TextSegment(text=" with @src/app.py"),
        PasteSegment(id=1, text="trace: @src/app.py"),
    ]
    assert run_segments(chips, exists=fs.exists) == [
        TextSegment(text="compare "),
        FileRefSegment(path="README.md"),
        TextSegment(text=" with "),
        FileRefSegment(path="src/app.py"),
        PasteSegment(id=1, text="trace: @src/app.py"),
    ]


def test_an_existing_file_with_an_unlisted_extension_is_attached_or_warned(
    workspace: Path,
) -> None:
    # ``.bin`` is not a known extension: before, "@data.bin" stayed text with no warning.
    (workspace / "data.bin").write_bytes(b"\x00\x01\x02")
    (workspace / "notes.v2").write_text("second draft\n")
    fs = ScopedFS(workspace)
    segments = run_segments(
        [TextSegment(text="see @data.bin and @notes.v2, not @pytest.fixture")], exists=fs.exists
    )
    assert [s.path for s in segments if isinstance(s, FileRefSegment)] == ["data.bin", "notes.v2"]
    sub = resolve_submission(segments, fs=fs, config=PodConfig(workspace=workspace))
    assert [i.text for i in sub.attach if isinstance(i, SystemMessage)] == [
        "[File: notes.v2]\nsecond draft\n"
    ]
    assert [(a.level, a.source) for a in sub.alerts] == [("warn", "file_ref")]
    assert "@data.bin" in sub.alerts[0].message and "binary" in sub.alerts[0].message


def test_refs_past_the_per_message_limit_stay_text_with_one_warning(workspace: Path) -> None:
    for n in range(9):
        (workspace / f"f{n}.txt").write_text(f"body {n}\n")
    segments = [FileRefSegment(path=f"f{n}.txt") for n in range(9)]
    segments.append(FileRefSegment(path="f0.txt"))  # a repeat is not a new file
    config = PodConfig(workspace=workspace, file_ref_max_count=2)
    sub = resolve_submission(segments, fs=ScopedFS(workspace), config=config)
    assert [i.text.splitlines()[0] for i in sub.attach] == ["[File: f0.txt]", "[File: f1.txt]"]
    assert sub.text == "".join(f"@f{n}.txt" for n in [*range(9), 0])
    assert sub.alerts == [
        Alert(
            "warn",
            "file_ref",
            "only 2 files are attached per message; @f2.txt, @f3.txt, @f4.txt, @f5.txt, "
            "@f6.txt and 2 more stayed as text",
        )
    ]


def test_the_synthetic_read_style_warns_past_max_preread_files(workspace: Path) -> None:
    config = PodConfig(workspace=workspace, file_ref_style="synthetic_read", max_preread_files=1)
    segments = [FileRefSegment(path="README.md"), FileRefSegment(path="src/app.py")]
    sub = resolve_submission(segments, fs=ScopedFS(workspace), config=config)
    assert [ref.label for ref in sub.preread] == ["README.md", "src/app.py"]  # the reader caps
    assert [a.message for a in sub.alerts] == [
        "only 1 files are attached per message; @src/app.py stayed as text"
    ]
