"""The record of what hooks decided: a denial the pod never acted on is withdrawn in the file."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from orchestrator.adapters.session import SessionWriter, load_session
from orchestrator.adapters.session.records import HookRecord
from orchestrator.capabilities.hooks.commands import CommandHooks
from orchestrator.capabilities.hooks.events import HookContext
from orchestrator.capabilities.hooks.runner import HookRunner
from orchestrator.config.hooks import HooksConfig
from orchestrator.core.interceptors import HookEvent

DENY = json.dumps(
    {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "not here",
        }
    }
)


async def test_a_denial_interrupted_while_it_is_synced_is_withdrawn_in_the_file(
    tmp_path: Path,
) -> None:
    """A pause that lands while a PreToolUse denial is being synced: the pod never acts on it
    (the call stays unanswered and Resume asks the hooks again), so the file must not close the
    call as denied on a restart either."""
    session = tmp_path / "s.jsonl"
    writer = SessionWriter(session, pod="p", workspace=tmp_path)
    syncing = asyncio.Event()
    release = asyncio.Event()

    async def record(entry: HookRecord) -> None:
        writer.record(entry)  # on disk, as the batch in flight would be
        syncing.set()
        await release.wait()

    config = HooksConfig.model_validate(
        {
            "PreToolUse": [
                {"matcher": "bash", "hooks": [{"type": "command", "command": f"echo '{DENY}'"}]}
            ]
        }
    )
    hooks = CommandHooks(
        config=config,
        runner=HookRunner(workspace=tmp_path, env={"PATH": "/usr/bin:/bin"}, hooks_dir=tmp_path),
        context=HookContext(
            session_id="s", transcript_path=session, cwd=tmp_path, permission_mode="default"
        ),
        record=record,
        keep=writer.record,
        alert=lambda level, message: None,
    )
    fields = {"tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "c1"}
    task = asyncio.create_task(
        hooks.fire(HookEvent.PRE_TOOL_USE, fields, subject="bash", tool="bash", call_id="c1")
    )
    await asyncio.wait_for(syncing.wait(), 30)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    writer.close()
    loaded = load_session(session)
    assert not loaded.warnings
    assert loaded.hook_denials == {}
    # Without the withdrawal, the denial alone would close the call on a restart.
    kinds = [json.loads(line).get("decision") for line in session.read_text().splitlines()[1:]]
    assert kinds == ["deny", "none"]
