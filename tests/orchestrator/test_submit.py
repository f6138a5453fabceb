"""Submit resolution as data: text for the model, items to attach, reads for later, alerts."""

from __future__ import annotations

from pathlib import Path

from orchestrator.config import PodConfig
from orchestrator.history import SystemMessage
from orchestrator.scoped_fs import ScopedFS
from orchestrator.segments import (
    FileRefSegment,
    KnowledgeRefSegment,
    TextSegment,
    UnknownSegment,
    WorkflowInvokeSegment,
)
from orchestrator.submit import Alert, resolve_submission, run_segments


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
    assert sub.preread == ["README.md"]
    assert [i.text for i in sub.attach if isinstance(i, SystemMessage)] == [
        "[Knowledge: deploy]\nsteps"
    ]


def test_segments_the_pod_cannot_take_are_reported(workspace: Path) -> None:
    config = PodConfig(workspace=workspace)
    segments = [UnknownSegment(kind="sticker"), WorkflowInvokeSegment(slug="release")]
    sub = resolve_submission(segments, fs=ScopedFS(workspace), config=config)
    assert [a.message for a in sub.alerts] == [
        "segment kind 'sticker' is not supported by this pod; the model sees a placeholder",
        "workflows are not available; /release sent as text",
    ]
    off = PodConfig(workspace=workspace, memory={"enabled": False})
    sub = resolve_submission([KnowledgeRefSegment(slug="x")], fs=ScopedFS(workspace), config=off)
    assert sub.attach == [] and sub.alerts[0].source == "knowledge_ref"


def test_plain_input_is_scanned_for_mentions(workspace: Path) -> None:
    fs = ScopedFS(workspace)
    plain = run_segments([TextSegment(text="explain @src/app.py")], plain=True, exists=fs.exists)
    assert plain == [TextSegment(text="explain "), FileRefSegment(path="src/app.py")]
    typed = [TextSegment(text="explain @src/app.py")]
    assert run_segments(typed, plain=False, exists=fs.exists) == typed
