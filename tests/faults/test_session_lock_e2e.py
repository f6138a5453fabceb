"""Two pods on one session file: the second is refused with the name of the first."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from orchestrator.session import SessionLocked, load_session
from tests.e2e.harness import ScriptedReply, collect_until, running_pod


async def test_a_second_pod_on_a_live_session_is_refused(
    workspace: Path, short_dir: Path, tmp_path: Path
) -> None:
    session = tmp_path / "shared.jsonl"
    other_dir = short_dir / "b"
    other_dir.mkdir()
    replies = [ScriptedReply(text="one"), ScriptedReply(text="two")]
    async with running_pod(workspace, short_dir, replies=replies, session=session) as pod:
        c = await pod.client()
        await c.send("run", {"input": "first"})
        await collect_until(c, "run_end")
        with pytest.raises(SessionLocked, match=f"pod t, pid \\d+, socket {pod.socket}"):
            async with running_pod(workspace, other_dir, session=session, continue_=True):
                pass
        # The first pod is unaffected and keeps numbering its own items.
        await c.send("run", {"input": "second"})
        await collect_until(c, "run_end")
        await c.close()
    loaded = load_session(session)
    assert not loaded.warnings
    assert [i.seq for i in loaded.items] == [1, 2, 3, 4]


@pytest.mark.parametrize("link", ["symlink", "hardlink"])
async def test_a_second_pod_through_a_link_is_refused_and_nothing_is_lost(
    workspace: Path, short_dir: Path, tmp_path: Path, link: str
) -> None:
    session = tmp_path / "shared.jsonl"
    alias = tmp_path / "alias.jsonl"
    other_dir = short_dir / "b"
    other_dir.mkdir()
    replies = [ScriptedReply(text="one"), ScriptedReply(text="two")]
    async with running_pod(workspace, short_dir, replies=replies, session=session) as pod:
        if link == "symlink":
            alias.symlink_to(session)
        else:
            os.link(session, alias)
        c = await pod.client()
        await c.send("run", {"input": "first"})
        await collect_until(c, "run_end")
        with pytest.raises(SessionLocked, match="in use by another pod"):
            async with running_pod(workspace, other_dir, session=alias, continue_=True):
                pass
        await c.send("run", {"input": "second"})
        await collect_until(c, "run_end")
        await c.close()
    loaded = load_session(session)
    assert not loaded.warnings
    assert [i.seq for i in loaded.items] == [1, 2, 3, 4]
