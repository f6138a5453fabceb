"""The tool runner: write-ahead records for tools with side effects, spools, refusals."""

from __future__ import annotations

import asyncio
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from orchestrator.adapters.scoped_fs import ScopedFS
from orchestrator.adapters.session import (
    SessionWriteError,
    SessionWriter,
    ToolSpools,
    ToolStartRecord,
    load_session,
)
from orchestrator.capabilities.hooks.chain import InterceptorChain
from orchestrator.capabilities.permissions import Policy
from orchestrator.capabilities.permissions.approvals import Answer, Approvals
from orchestrator.capabilities.tools import (
    BashTool,
    GlobTool,
    GrepTool,
    ReadFileTool,
    WriteFileTool,
)
from orchestrator.capabilities.tools.base import ToolContext, ToolOutput
from orchestrator.capabilities.tools.registry import ToolRegistry
from orchestrator.config.model import PodConfig
from orchestrator.config.permissions import PermissionsConfig
from orchestrator.core.history import AssistantMessage, History, Item, ToolResult, ToolUseBlock
from orchestrator.core.repair import pending_tool_calls
from orchestrator.runtime.tool_runner import ToolRunner
from orchestrator.runtime.transcript import Transcript
from orchestrator.serving.pod import crash_results


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


def _runner(
    tmp_path: Path, *tools: Any, policy: Policy | None = None, root: Path | None = None
) -> tuple[ToolRunner, Transcript]:
    session = tmp_path / "s.jsonl"
    root = root or tmp_path
    writer = SessionWriter(session, pod="p", workspace=tmp_path)
    transcript = Transcript(history=History(), session=writer, broadcast=lambda line: None)
    runner = ToolRunner(
        registry=ToolRegistry(list(tools)),
        fs=ScopedFS(root),
        workspace=root,
        scratch_dir=tmp_path / "scratch",
        cap_for=lambda name: 1000,
        interceptors=InterceptorChain(),
        journal=transcript,
        spools=ToolSpools(session),
        policy=policy,
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

    async def record_tool_start(self, record: ToolStartRecord) -> None:
        raise SessionWriteError(Path("/s.jsonl"), OSError(28, "No space left on device"))

    def record_tool_not_started(self, call_id: str) -> None:
        raise AssertionError("a refused start is never written, so it is never cancelled")


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


class HeldWriter(SessionWriter):
    """A real session writer whose writes wait at a gate (a slow ``fdatasync``)."""

    def __init__(self, path: Path, workspace: Path) -> None:
        self.gate = threading.Event()
        self.gate.set()
        self.entered = threading.Event()
        super().__init__(path, pod="p", workspace=workspace)

    def write_lines(self, lines: list[bytes]) -> None:
        self.entered.set()
        self.gate.wait(10)
        super().write_lines(lines)


async def test_a_call_paused_while_its_start_is_synced_is_not_a_crashed_call_on_reload(
    tmp_path: Path,
) -> None:
    """A pause that lands while a call's write-ahead record is on its way to the disk: the
    call never ran, so the paused pod keeps it unanswered and Resume runs it. The file must say
    the same: loaded (a restart, a kill -9 of the paused pod), the call is not one the pod was
    running when it died, which the restart would close as crashed and never run (the lifecycle
    fuzz's "killed while paused comes back paused" saw that extra result)."""
    session = tmp_path / "s.jsonl"
    writes = Probe("writes", side_effects=True, session=session)
    writer = HeldWriter(session, tmp_path)
    history = History()
    history.new_turn()
    transcript = Transcript(history=history, session=writer, broadcast=lambda line: None)
    executor = ThreadPoolExecutor(max_workers=1)
    try:
        transcript.write_in_background(executor)
        runner = ToolRunner(
            registry=ToolRegistry([writes]),
            fs=ScopedFS(tmp_path),
            workspace=tmp_path,
            scratch_dir=tmp_path / "scratch",
            cap_for=lambda name: 1000,
            interceptors=InterceptorChain(),
            journal=transcript,
            spools=ToolSpools(session),
        )
        call = ToolUseBlock(id="c1", name="writes")
        transcript.commit(AssistantMessage(blocks=[call]))
        await transcript.settled()
        writer.gate.clear()
        writer.entered.clear()
        task = asyncio.create_task(runner.run_calls([call], transcript.commit))
        assert await asyncio.to_thread(writer.entered.wait, 5)  # the start record is syncing
        task.cancel()  # the pause
        writer.gate.set()
        with pytest.raises(asyncio.CancelledError):
            await task
        await transcript.settled()
    finally:
        executor.shutdown(wait=True)
    assert writes.starts_seen == []  # it never ran
    assert [c.id for c in pending_tool_calls(transcript.history.items)] == ["c1"]
    loaded = load_session(session)
    assert not loaded.warnings
    config = PodConfig(workspace=tmp_path)
    assert crash_results(loaded, loaded.items, ToolSpools(session), config) == []  # not crashed
    assert [c.id for c in pending_tool_calls(loaded.items)] == ["c1"]  # Resume runs it
    assert not (ToolSpools(session).dir / "c1.log").exists()


# -- issue 27 §1: rules see the file the tool opens, and the file system enforces them


def _workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "secrets").mkdir(parents=True)
    (root / "src").mkdir()
    (root / "docs").mkdir()
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / ".env").write_text("TOKEN=hunter2\n")
    (root / "secrets" / "key").write_text("hunter2 private\n")
    (root / "src" / "app.py").write_text("print('hunter2 is not here')\n")
    (root / "alias").symlink_to("secrets", target_is_directory=True)
    (root / "env-link").symlink_to(".env")
    return root


async def _call(
    tmp_path: Path,
    tool: Any,
    arguments: dict[str, Any],
    asked: list[str] | None = None,
    **rules: Any,
) -> ToolResult:
    """Run one call under ``rules``; a person who is asked says no (and is noted in ``asked``)."""
    root = tmp_path / "ws" if (tmp_path / "ws").exists() else _workspace(tmp_path)
    policy = Policy.from_config(PermissionsConfig.model_validate(rules))
    runner, transcript = _runner(tmp_path, tool, policy=policy, root=root)

    def emit(event: str, data: Any) -> None:
        if event == "approval_request":
            (asked if asked is not None else []).append(data.reason)
            asyncio.get_running_loop().call_soon(
                approvals.answer, data.id, Answer(allow=False, message="no")
            )

    approvals = Approvals(policy=policy, emit=emit)
    runner.approvals = approvals
    call = ToolUseBlock(id="c1", name=tool.name, input=arguments)
    await runner.run_calls([call], transcript.commit)
    (result,) = [i for i in transcript.history.items if isinstance(i, ToolResult)]
    return result


@pytest.mark.parametrize(
    "path", [".env", "./.env", "src/../.env", "env-link", "{root}/.env", "alias/../.env"]
)
async def test_a_denied_file_cannot_be_read_by_any_spelling(tmp_path: Path, path: str) -> None:
    root = _workspace(tmp_path)
    result = await _call(
        tmp_path, ReadFileTool(), {"path": path.format(root=root)}, mode="yolo", deny=["read(.env)"]
    )
    assert result.is_error
    assert "hunter2" not in result.summary + str(result.content)


@pytest.mark.parametrize("path", ["./secrets/key", "secrets/key", "alias/key"])
async def test_a_denied_directory_cannot_be_read_through_a_symlink(
    tmp_path: Path, path: str
) -> None:
    result = await _call(
        tmp_path, ReadFileTool(), {"path": path}, mode="yolo", deny=["read(./secrets/**)"]
    )
    assert result.is_error
    assert "hunter2" not in str(result.content)


async def test_grep_over_the_workspace_skips_denied_files(tmp_path: Path) -> None:
    result = await _call(
        tmp_path,
        GrepTool(),
        {"pattern": "hunter2", "path": "."},
        mode="yolo",
        deny=["read(secrets)", "read(.env)"],
    )
    assert not result.is_error, result.summary
    text = result.summary + str(result.content)
    assert "src/app.py" in text
    assert "private" not in text and "TOKEN" not in text


async def test_grep_aimed_at_a_denied_file_is_refused(tmp_path: Path) -> None:
    result = await _call(
        tmp_path,
        GrepTool(),
        {"pattern": "hunter2", "path": "alias/key"},
        mode="yolo",
        deny=["read(secrets)"],
    )
    assert result.is_error
    assert "private" not in str(result.content)


async def test_glob_does_not_list_denied_files(tmp_path: Path) -> None:
    result = await _call(
        tmp_path, GlobTool(), {"pattern": "**/*"}, mode="yolo", deny=["read(secrets)"]
    )
    text = result.summary + str(result.content)
    assert "src/app.py" in text and "secrets/key" not in text


@pytest.mark.parametrize(
    "path", ["docs/../.git/hooks/pre-commit", "docs/../src/evil.py", "docs/../alias/key"]
)
async def test_an_allow_rule_does_not_widen_past_its_directory(tmp_path: Path, path: str) -> None:
    asked: list[str] = []
    result = await _call(
        tmp_path,
        WriteFileTool(),
        {"path": path, "content": "evil"},
        asked,
        mode="default",
        allow=["write(docs/**)"],
    )
    assert result.is_error and "denied by user" in result.summary
    assert len(asked) == 1
    root = tmp_path / "ws"
    assert not (root / ".git/hooks/pre-commit").exists()
    assert not (root / "src/evil.py").exists()
    assert (root / "secrets/key").read_text() == "hunter2 private\n"


async def test_an_allowed_write_inside_its_directory_runs(tmp_path: Path) -> None:
    asked: list[str] = []
    result = await _call(
        tmp_path,
        WriteFileTool(),
        {"path": "./docs/a.md", "content": "hi"},
        asked,
        mode="default",
        allow=["write(docs/**)"],
        deny=["edit(src/**)"],
    )
    assert not result.is_error, result.summary
    assert asked == []
    assert (tmp_path / "ws/docs/a.md").read_text() == "hi"


async def test_accept_edits_still_honours_deny_rules(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    (root / "docs" / "link").symlink_to(root / "src")
    result = await _call(
        tmp_path,
        WriteFileTool(),
        {"path": "docs/link/app.py", "content": "x"},
        mode="accept-edits",
        deny=["edit(src/**)"],
    )
    assert result.is_error and "src" in result.summary
    assert "hunter2" in (root / "src/app.py").read_text()


# -- issue 27 §3: protected paths ask however the write is made


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        (WriteFileTool(), {"path": "./.git/config", "content": "[core]\\nfsmonitor=evil"}),
        (WriteFileTool(), {"path": "docs/../.git/hooks/pre-commit", "content": "evil"}),
        (BashTool(), {"command": "git status > .git/config"}),
    ],
)
async def test_accept_edits_asks_before_writing_a_protected_path(
    tmp_path: Path, tool: Any, arguments: dict[str, Any]
) -> None:
    asked: list[str] = []
    result = await _call(
        tmp_path, tool, arguments, asked, mode="accept-edits", allow=["bash(git status*)"]
    )
    assert asked and "always asks" in asked[0]
    assert result.is_error
    root = tmp_path / "ws"
    assert not (root / ".git/config").exists()
    assert not (root / ".git/hooks/pre-commit").exists()


class Reader:
    """A read tool that, besides its argument, opens another file (as a search does)."""

    name = "reader"
    kind = "read"
    side_effects = False
    description = "reads two files"
    input_schema: dict[str, Any] = {"type": "object"}  # noqa: RUF012

    def __init__(self, also: str) -> None:
        self.also = also

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        first = ctx.fs.read_text(args["path"]).text
        second = ctx.fs.read_text(self.also).text
        return ToolOutput(summary="read both", content=first + second)


@pytest.mark.parametrize("also", ["secrets/key", "alias/key", ".env"])
async def test_a_path_the_decision_did_not_see_is_refused_when_its_rules_deny_it(
    tmp_path: Path, also: str
) -> None:
    result = await _call(
        tmp_path,
        Reader(also),
        {"path": "src/app.py"},
        mode="yolo",
        deny=["read(secrets)", "read(.env)"],
    )
    assert result.is_error and "denied by the rule" in result.summary
    assert "hunter2 private" not in str(result.content)


async def test_a_path_the_decision_did_not_see_is_refused_when_it_would_ask(
    tmp_path: Path,
) -> None:
    result = await _call(
        tmp_path,
        Reader("secrets/key"),
        {"path": "src/app.py"},
        mode="yolo",
        ask=["read(secrets)"],
    )
    assert result.is_error and "nobody approved it" in result.summary
