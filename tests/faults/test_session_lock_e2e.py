"""Two pods on one session file: the second is refused with the name of the first, whether it
names the file by the same path, through a symlink or through a hard link."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from orchestrator.adapters.session import SessionLocked, load_session
from tests.e2e.harness import ScriptedReply, collect_until, running_pod


@pytest.mark.parametrize("way", ["same path", "symlink", "hardlink"])
async def test_a_second_pod_on_a_live_session_is_refused(
    workspace: Path, short_dir: Path, tmp_path: Path, way: str
) -> None:
    session = tmp_path / "shared.jsonl"
    second = session if way == "same path" else tmp_path / "alias.jsonl"
    other_dir = short_dir / "b"
    other_dir.mkdir()
    replies = [ScriptedReply(text="one"), ScriptedReply(text="two")]
    async with running_pod(workspace, short_dir, replies=replies, session=session) as pod:
        if way == "symlink":
            second.symlink_to(session)
        elif way == "hardlink":
            os.link(session, second)
        c = await pod.client()
        await c.send("run", {"input": "first"})
        await collect_until(c, "run_end")
        # A hard link has no path back to the holder's note: only "another pod".
        who = "unknown" if way == "hardlink" else f"pod t, pid \\d+, socket {pod.socket}"
        with pytest.raises(SessionLocked, match=f"in use by another pod \\({who}\\)"):
            async with running_pod(workspace, other_dir, session=second, continue_=True):
                pass
        # The first pod is unaffected and keeps numbering its own items.
        await c.send("run", {"input": "second"})
        await collect_until(c, "run_end")
        await c.close()
    loaded = load_session(session)
    assert not loaded.warnings
    assert [i.seq for i in loaded.items] == [1, 2, 3, 4]
