"""The tool runner: write-ahead records for tools with side effects, spools, refusals."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from orchestrator.history import History, Item, ToolResult, ToolUseBlock
from orchestrator.interceptors import InterceptorChain
from orchestrator.scoped_fs import ScopedFS
from orchestrator.session import SessionWriteError, SessionWriter, ToolSpools, ToolStartRecord
from orchestrator.tool_runner import ToolRunner
from orchestrator.tools.base import ToolContext, ToolOutput
from orchestrator.tools.registry import ToolRegistry
from orchestrator.transcript import Transcript


class Probe:
    """A tool that records what the session file held when it started."""

    description = "probe"
    input_schema: dict[str, Any] = {"type": "object"}  # noqa: RUF012

    def __init__(self, name: str, *, side_effects: bool, session: Path) -> None:
        self.name = name
        self.side_effects = side_effects
        self.session = session
        self.starts_seen: list[list[str]] = []

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        records = [json.loads(line) for line in self.session.read_text().splitlines()]
        self.starts_seen.append([r["call_id"] for r in records if r["type"] == "tool_start"])
        ctx.partial.append("partial output\n")
        spool = ToolSpools(self.session)
        if ctx.partial.spool_fd is not None:
            assert (spool.dir / "c1.log").read_text() == "partial output\n"
        return ToolOutput(summary=f"{self.name}: ok")


def _runner(tmp_path: Path, *tools: Any) -> tuple[ToolRunner, Transcript]:
    session = tmp_path / "s.jsonl"
    writer = SessionWriter(session, pod="p", workspace=tmp_path)
    transcript = Transcript(history=History(), session=writer, broadcast=lambda line: None)
    runner = ToolRunner(
        registry=ToolRegistry(list(tools)),
        fs=ScopedFS(tmp_path),
        workspace=tmp_path,
        scratch_dir=tmp_path / "scratch",
        cap_for=lambda name: 1000,
        interceptors=InterceptorChain(),
        journal=transcript,
        spools=ToolSpools(session),
    )
    return runner, transcript


async def test_a_tool_with_side_effects_starts_only_after_its_record_is_on_disk(
    tmp_path: Path,
) -> None:
    session = tmp_path / "s.jsonl"
    writes = Probe("writes", side_effects=True, session=session)
    reads = Probe("reads", side_effects=False, session=session)
    runner, transcript = _runner(tmp_path, writes, reads)
    calls = [ToolUseBlock(id="c1", name="writes"), ToolUseBlock(id="c2", name="reads")]
    await runner.run_calls(calls, transcript.commit)
    assert writes.starts_seen == [["c1"]]
    assert reads.starts_seen == [["c1"]]  # the read-only call wrote no record of its own
    results = [i for i in transcript.history.items if isinstance(i, ToolResult)]
    assert sorted(r.call_id for r in results) == ["c1", "c2"]
    assert not (ToolSpools(session).dir / "c1.log").exists()  # spent once the result is saved


class RefusingJournal:
    """A journal whose disk is full."""

    durable = False

    def record_tool_start(self, record: ToolStartRecord) -> None:
        raise SessionWriteError(Path("/s.jsonl"), OSError(28, "No space left on device"))


async def test_a_tool_whose_start_cannot_be_recorded_does_not_run(tmp_path: Path) -> None:
    session = tmp_path / "s.jsonl"
    writes = Probe("writes", side_effects=True, session=session)
    runner, _ = _runner(tmp_path, writes)
    runner.journal = RefusingJournal()
    committed: list[Item] = []

    def commit(item: Item) -> Item:
        committed.append(item)
        return item

    with pytest.raises(SessionWriteError):
        await runner.run_calls([ToolUseBlock(id="c1", name="writes")], commit)
    assert writes.starts_seen == []
    [result] = committed
    assert isinstance(result, ToolResult) and result.is_error
    assert result.summary == (
        "writes: not run — cannot write the session file /s.jsonl: No space left on device"
    )
