"""What the model sees, checked on the wire: @file styles, caps, pruning, the system prompt."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from orchestrator.adapters.session import load_session
from orchestrator.config.sections import MemoryConfig
from orchestrator.core.history import ToolResult
from tests.e2e.harness import ScriptedReply, ScriptedToolCall, collect_until, running_pod


async def test_file_ref_as_system_message_on_the_wire(workspace: Path, short_dir: Path) -> None:
    async with running_pod(workspace, short_dir, replies=[ScriptedReply(text="ok")]) as pod:
        c = await pod.client()
        await c.send(
            "run",
            {
                "segments": [
                    {"kind": "text", "text": "explain "},
                    {"kind": "file_ref", "path": "src/app.py"},
                    {"kind": "text", "text": " and "},
                    {"kind": "file_ref", "path": "missing.py"},
                ]
            },
        )
        events = await collect_until(c, "run_end")
        alerts = [e.data["message"] for e in events if e.event == "alert"]
        assert alerts == ["could not attach @missing.py: not found"]
        assert pod.provider.requests[0].messages == [
            {
                "role": "user",
                "content": [
                    {
                        "type": "text",
                        "text": "explain @src/app.py and [unresolved file ref: missing.py]",
                    },
                    {"type": "text", "text": "[File: src/app.py]\ndef main():\n    return 42\n"},
                ],
            }
        ]
        await c.close()


async def test_file_ref_as_synthetic_read_on_the_wire(workspace: Path, short_dir: Path) -> None:
    async with running_pod(
        workspace, short_dir, replies=[ScriptedReply(text="ok")], file_ref_style="synthetic_read"
    ) as pod:
        c = await pod.client()
        await c.send(
            "run",
            {
                "segments": [
                    {"kind": "text", "text": "see "},
                    {"kind": "file_ref", "path": "README.md"},
                ]
            },
        )
        events = await collect_until(c, "run_end")
        starts = [e.data for e in events if e.event == "tool_call_start"]
        assert starts == [{"id": "toolu_preread_1_1", "name": "read_file"}]
        results = [e.data for e in events if e.event == "tool_result"]
        assert results[0]["synthetic"] is True
        messages = pod.provider.requests[0].messages
        assert messages[0] == {
            "role": "user",
            "content": [{"type": "text", "text": "see @README.md"}],
        }
        assert messages[1] == {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "toolu_preread_1_1",
                    "name": "read_file",
                    "input": {"path": "README.md"},
                }
            ],
        }
        assert messages[2]["content"][0]["tool_use_id"] == "toolu_preread_1_1"
        assert messages[2]["content"][0]["content"].startswith("read_file: README.md — 3 lines\n")
        pod.assert_all_requests_valid()
        await c.close()


async def test_big_file_is_capped_on_a_character_boundary(workspace: Path, short_dir: Path) -> None:
    (workspace / "big.txt").write_text("é" * 10_000)  # 20,000 bytes of 2-byte characters
    async with running_pod(workspace, short_dir, replies=[ScriptedReply(text="ok")]) as pod:
        c = await pod.client()
        await c.send("run", {"segments": [{"kind": "file_ref", "path": "big.txt"}]})
        await collect_until(c, "run_end")
        body = pod.provider.requests[0].messages[0]["content"][1]["text"]
        head, _, marker = body.rpartition("\n")
        assert marker == "[...truncated, 20000 bytes total — use read_file for the rest]"
        assert head == "[File: big.txt]\n" + "é" * 8192
        await c.close()


async def test_special_files_are_refused_and_the_pod_stays_up(
    workspace: Path, short_dir: Path
) -> None:
    os.mkfifo(workspace / "pipe")
    async with running_pod(workspace, short_dir, replies=[ScriptedReply(text="ok")]) as pod:
        c = await pod.client()
        await c.send(
            "run",
            {
                "segments": [
                    {"kind": "file_ref", "path": "pipe"},
                    {"kind": "file_ref", "path": "/dev/zero"},
                    {"kind": "file_ref", "path": "../../etc/passwd"},
                ]
            },
        )
        events = await asyncio.wait_for(collect_until(c, "run_end"), 10)
        alerts = [e.data["message"] for e in events if e.event == "alert"]
        assert len(alerts) == 3
        assert "not a regular file" in alerts[0]
        text = pod.provider.requests[0].messages[0]["content"][0]["text"]
        assert text == (
            "[unresolved file ref: pipe][unresolved file ref: /dev/zero]"
            "[unresolved file ref: ../../etc/passwd]"
        )
        assert (await c.request("get_status")).data["status"] == "idle"
        await c.close()


async def test_old_tool_results_are_pruned_on_the_wire_but_kept_on_disk(
    workspace: Path, short_dir: Path
) -> None:
    def reading_turn(n: int) -> list[ScriptedReply]:
        call = ScriptedToolCall(name="read_file", input={"path": "README.md"}, id=f"toolu_r{n}")
        return [ScriptedReply(tool_calls=[call]), ScriptedReply(text=f"turn {n} done")]

    replies = reading_turn(1) + reading_turn(2) + reading_turn(3)
    async with running_pod(
        workspace, short_dir, replies=replies, prune_keep_turns=1, prune_step_tokens=0
    ) as pod:
        c = await pod.client()
        for n in range(1, 4):
            await c.send("run", {"input": f"turn {n}"})
            await collect_until(c, "run_end")
        last = pod.provider.requests[-1].messages
        results = {
            block["tool_use_id"]: block["content"]
            for m in last
            if m["role"] == "user"
            for block in m["content"]
            if block["type"] == "tool_result"
        }
        assert results["toolu_r1"] == "read_file: README.md — 3 lines"
        assert results["toolu_r2"] == "read_file: README.md — 3 lines"
        assert results["toolu_r3"].startswith("read_file: README.md — 3 lines\n    1\t# Demo")
        await c.send("shutdown")
        await c.close()
        served = await asyncio.wait_for(pod.task, 10)
    session = load_session(served.session_path)
    kept = [i for i in session.items if isinstance(i, ToolResult)]
    assert all(r.content and "# Demo" in r.content for r in kept)
    # The moves of the prune bound are recorded, so what was sent can be reconstructed.
    assert session.prune_before_turn == 3


def _knowledge(workspace: Path) -> None:
    kdir = workspace / "knowledge"
    kdir.mkdir()
    (kdir / "zeta.md").write_text("---\ndescription: Last one\nmodel_invokation: true\n---\nZ\n")
    (kdir / "alpha.md").write_text(
        "---\ndescription: |\n  Deploy steps\n  for prod\nmodel_invokation: true\n---\nA\n"
    )
    (kdir / "hidden.md").write_text(
        "---\ndescription: Not resident\nmodel_invokation: false\n---\n"
    )
    (workspace / "AGENTS.md").write_text("Always run the tests.\n")


async def test_system_prompt_on_the_wire(workspace: Path, short_dir: Path) -> None:
    _knowledge(workspace)
    async with running_pod(workspace, short_dir, replies=[ScriptedReply(text="ok")]) as pod:
        c = await pod.client()
        await c.send("run", {"input": "hi"})
        await collect_until(c, "run_end")
        system = pod.provider.requests[0].system
        boundaries = system.index("## Working boundaries")
        agents = system.index("Always run the tests.")
        resident = system.index("## Resident knowledge")
        assert 0 < boundaries < agents < resident
        section = system[resident:]
        assert "- alpha: Deploy steps for prod" in section
        assert section.index("- alpha:") < section.index("- zeta: Last one")
        assert "hidden" not in section
        assert "knowledge_search" in section and "memory_read" in section
        tool_names = {t["name"] for t in pod.provider.requests[0].tools}
        assert {"knowledge_search", "memory_read"} <= tool_names
        await c.close()


async def test_resident_knowledge_lever_and_memory_off(workspace: Path, short_dir: Path) -> None:
    _knowledge(workspace)
    for overrides in (
        {"inject_resident_knowledge": False},
        {"memory": MemoryConfig(enabled=False)},
    ):
        async with running_pod(
            workspace, short_dir, replies=[ScriptedReply(text="ok")], **overrides
        ) as pod:
            c = await pod.client()
            await c.send("run", {"input": "hi"})
            await collect_until(c, "run_end")
            system = pod.provider.requests[0].system
            assert "## Resident knowledge" not in system
            assert "Always run the tests." in system
            await c.close()


async def test_knowledge_ref_attaches_the_record_body(workspace: Path, short_dir: Path) -> None:
    _knowledge(workspace)
    async with running_pod(workspace, short_dir, replies=[ScriptedReply(text="ok")]) as pod:
        c = await pod.client()
        await c.send(
            "run",
            {
                "segments": [
                    {"kind": "text", "text": "use "},
                    {"kind": "knowledge_ref", "slug": "alpha"},
                    {"kind": "text", "text": " and "},
                    {"kind": "knowledge_ref", "slug": "nope"},
                ]
            },
        )
        events = await collect_until(c, "run_end")
        alerts = [e.data["message"] for e in events if e.event == "alert"]
        assert len(alerts) == 1 and alerts[0].startswith("could not attach @knowledge:nope: ")
        assert pod.provider.requests[0].messages[0]["content"] == [
            {"type": "text", "text": "use @knowledge:alpha and @knowledge:nope"},
            {"type": "text", "text": "[Knowledge: alpha]\nA"},
        ]
        await c.close()


async def test_a_line_range_typed_in_plain_input_reaches_the_wire(
    workspace: Path, short_dir: Path
) -> None:
    (workspace / "long.txt").write_text("".join(f"row {n}\n" for n in range(1, 51)))
    async with running_pod(workspace, short_dir, replies=[ScriptedReply(text="ok")]) as pod:
        c = await pod.client()
        await c.send("run", {"input": "why @long.txt#L20-L22?"})
        events = await collect_until(c, "run_end")
        assert [e for e in events if e.event == "alert"] == []
        [user] = pod.provider.requests[0].messages
        text, attached = user["content"]
        assert text == {"type": "text", "text": "why @long.txt:L20-L22?"}
        header, *rows = attached["text"].splitlines()
        assert header == "[File: long.txt (lines 20-22)]"
        assert [row.split(maxsplit=1)[1] for row in rows] == ["row 20", "row 21", "row 22"]
        history = await c.request("get_history")
        ref = history.data["items"][0]["segments"][1]
        assert ref == {"kind": "file_ref", "path": "long.txt", "start_line": 20, "end_line": 22}
        await c.close()
