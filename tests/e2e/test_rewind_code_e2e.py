"""Rewinding the workspace: what ``write_file``, ``edit_file`` and ``bash`` changed in a turn
comes back byte for byte, the conversation as asked, and a rewind cut short by kill -9 is
finished when the pod starts again."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import stat
from pathlib import Path
from typing import Any

from orchestrator.adapters.session import load_session
from orchestrator.serving.client import PodClient
from tests.e2e.harness import (
    ScriptedReply,
    ScriptedToolCall,
    collect_until,
    running_pod,
    start_pod_process,
    what_it_said,
)


def tree(root: Path) -> dict[str, tuple[bytes, bool]]:
    """Every file under ``root`` (but .pod/) with its bytes and executable bit."""
    found: dict[str, tuple[bytes, bool]] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(".pod") or not path.is_file():
            continue
        found[rel] = (path.read_bytes(), bool(path.stat().st_mode & stat.S_IXUSR))
    return found


def call(name: str, **args: Any) -> ScriptedToolCall:
    return ScriptedToolCall(name=name, input=args)


CHANGES = ScriptedReply(
    tool_calls=[
        call("write_file", path="new.md", content="written by the model\n"),
        call("edit_file", path="README.md", old_string="# Demo", new_string="# Edited"),
        call("bash", command="rm gone.txt && mkdir -p made && printf 'x\\0y' > made/bin.dat"),
    ]
)


async def run(c: PodClient, text: str) -> list[Any]:
    await c.send("run", {"input": text})
    return await collect_until(c, "run_end", timeout=30)


def prompts(items: list[dict[str, Any]]) -> list[int]:
    return [i["seq"] for i in items if i["kind"] == "user_message"]


async def test_rewinding_both_restores_the_files_and_the_conversation(
    workspace: Path, short_dir: Path
) -> None:
    (workspace / "gone.txt").write_text("deleted by bash\n")
    (workspace / "tool.sh").write_text("#!/bin/sh\n")
    (workspace / "tool.sh").chmod(0o755)
    replies = [
        ScriptedReply(text="hi"),
        CHANGES,
        ScriptedReply(text="changed"),
        ScriptedReply(text="again"),
    ]
    async with running_pod(workspace, short_dir, replies=replies, allow_bash=True) as pod:
        c = await pod.client()
        await run(c, "look around")
        before = tree(workspace)
        await run(c, "change things")
        assert tree(workspace) != before
        assert not (workspace / "gone.txt").exists() and (workspace / "made/bin.dat").exists()
        second = prompts((await c.request("get_history")).data["items"])[1]
        preview = await c.request("rewind", {"to": second, "dry_run": True})
        files = preview.data["files"]
        assert sorted(files["restored"]) == ["README.md", "gone.txt"]
        assert sorted(files["deleted"]) == ["made/bin.dat", "new.md"]
        assert tree(workspace) != before  # a preview changes nothing
        await c.send("rewind", {"to": second})
        done = await c.wait_for("rewound")
        assert sorted(done.data["files"]["deleted"]) == ["made/bin.dat", "new.md"]
        assert tree(workspace) == before
        await c.wait_for("status", status="idle")
        await run(c, "something else")
        last = pod.provider.requests[-1].messages
        texts = [b.get("text") for m in last for b in m["content"] if b.get("type") == "text"]
        assert texts == ["look around", "hi", "something else"]
        pod.assert_all_requests_valid()
        await c.close()


async def test_code_only_keeps_the_conversation_and_conversation_only_keeps_the_files(
    workspace: Path, short_dir: Path
) -> None:
    (workspace / "gone.txt").write_text("deleted by bash\n")
    replies = [CHANGES, ScriptedReply(text="changed"), CHANGES, ScriptedReply(text="again")]
    async with running_pod(workspace, short_dir, replies=replies, allow_bash=True) as pod:
        c = await pod.client()
        before = tree(workspace)
        await run(c, "change things")
        changed = tree(workspace)
        items = (await c.request("get_history")).data["items"]
        [first] = prompts(items)
        await c.send("rewind", {"to": first, "restore": "code"})
        await c.wait_for("rewound")
        assert tree(workspace) == before
        assert (await c.request("get_history")).data["items"] == items
        await c.wait_for("status", status="idle")
        await run(c, "change them again")  # the same changes, from the restored files
        assert tree(workspace) == changed
        items = (await c.request("get_history")).data["items"]
        await c.send("rewind", {"to": prompts(items)[1], "restore": "conversation"})
        await c.wait_for("rewound")
        assert tree(workspace) == changed
        assert prompts((await c.request("get_history")).data["items"]) == [first]
        await c.close()


async def test_a_rewind_cut_short_by_kill_9_is_finished_at_the_next_start(
    workspace: Path, short_dir: Path, tmp_path: Path
) -> None:
    for n in range(400):  # enough files that the restore takes a while
        (workspace / f"f{n:03}.txt").write_text(f"original {n}\n")
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            {
                "replies": [
                    {"text": "ok"},
                    {
                        "tool_calls": [
                            {
                                "name": "bash",
                                "input": {
                                    "command": "for f in f*.txt; do echo changed > $f; done; touch extra.txt"
                                },
                            }
                        ]
                    },
                    {"text": "changed"},
                ]
            }
        )
    )
    session = tmp_path / "s.jsonl"
    socket = short_dir / "p.sock"
    proc = start_pod_process(workspace, socket, session, script)
    try:
        c = await PodClient.connect(socket)
        await run(c, "hello")
        before = tree(workspace)
        await run(c, "change everything")
        second = prompts((await c.request("get_history")).data["items"])[1]
        await c.send("rewind", {"to": second})
        # Killed the moment the intent is on disk: mid-restore (or, on a fast machine, just
        # after it: either way the restart must show the whole rewind).
        while '"phase":"intent"' not in session.read_text():
            await asyncio.sleep(0.001)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        await c.close()
    finally:
        if proc.poll() is None:
            proc.kill()
    records = [json.loads(line) for line in session.read_text().splitlines()]
    phases = [r["phase"] for r in records if r["type"] == "rewind"]
    assert phases[0] == "intent"
    proc = start_pod_process(workspace, socket, session, script, "--continue")
    try:
        c = await PodClient.connect(socket)
        # Whatever the kill interrupted, the rewind is whole now: files and conversation.
        try:
            alerts = (await c.request("get_history")).data["alerts"]
        except Exception as exc:
            raise AssertionError(what_it_said(proc)) from exc
        assert tree(workspace) == before, alerts
        assert len(prompts((await c.request("get_history")).data["items"])) == 1
        await c.send("shutdown")
        await c.close()
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    loaded = load_session(session)
    assert loaded.pending_rewind is None
    assert [i.kind for i in loaded.items] == ["user_message", "assistant"]


async def test_a_restore_that_fails_says_the_files_may_be_partly_restored(
    workspace: Path, short_dir: Path, tmp_path: Path
) -> None:
    replies = [ScriptedReply(text="hi"), ScriptedReply(text="again")]
    session = tmp_path / "s.jsonl"
    async with running_pod(workspace, short_dir, replies=replies, session=session) as pod:
        c = await pod.client()
        await run(c, "one")
        await run(c, "two")
        items = (await c.request("get_history")).data["items"]
        second = prompts(items)[1]
        # The store's files go away under the pod (a disk problem, someone's rm -rf).
        store = tmp_path / "s.checkpoints"
        assert store.is_dir()
        for path in store.rglob("*"):
            if path.is_file():
                path.unlink()
        await c.send("rewind", {"to": second})
        error = await c.wait_for("error")
        assert error.data["message"].startswith("rewind failed: ")
        assert "partly restored until the pod's next start" in error.data["message"]
        await c.wait_for("status", status="idle")
        assert (await c.request("get_history")).data["items"] == items  # the conversation stays
        await c.close()


async def test_a_folder_bash_replaced_by_a_link_out_comes_back_and_nothing_outside_changes(
    workspace: Path, short_dir: Path, tmp_path: Path
) -> None:
    # Where the link leads there are files of the same names as the folder held.
    outside = tmp_path / "outside"
    (outside / "src").mkdir(parents=True)
    (outside / "src" / "app.py").write_text("outside's own\n")
    (outside / "keep.txt").write_text("outside\n")
    outside_before = tree(outside)
    swap = call("bash", command=f"rm -rf src && ln -s {outside / 'src'} src")
    replies = [ScriptedReply(tool_calls=[swap]), ScriptedReply(text="linked")]
    async with running_pod(workspace, short_dir, replies=replies, allow_bash=True) as pod:
        c = await pod.client()
        before = tree(workspace)
        await run(c, "swap the folder for a link")
        assert (workspace / "src").is_symlink()
        [first] = prompts((await c.request("get_history")).data["items"])
        await c.send("rewind", {"to": first, "restore": "code"})
        done = await c.wait_for("rewound")
        files = done.data["files"]
        assert (files["restored"], files["deleted"], files["left"]) == (["src/app.py"], ["src"], {})
        assert not (workspace / "src").is_symlink() and tree(workspace) == before
        assert tree(outside) == outside_before
        await c.close()
