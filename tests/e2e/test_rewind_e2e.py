"""Rewind and fork over the real socket: the conversation goes back to before a prompt (the
session file stays append-only), a paused turn is closed first, bad targets change nothing,
and a fork continues on its own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conformance.fake_api import FakeAnthropic, Reply, ToolCall
from orchestrator.adapters.session import load_session
from orchestrator.core.history import UserMessage
from orchestrator.serving.client import PodClient
from tests.e2e.harness import ScriptedReply, collect_until, fake_provider, running_pod


async def run(c: PodClient, text: str) -> list[Any]:
    await c.send("run", {"input": text})
    return await collect_until(c, "run_end", timeout=30)


def prompts(items: list[dict[str, Any]]) -> list[tuple[int, str]]:
    return [(i["seq"], i["text"]) for i in items if i["kind"] == "user_message"]


async def history(c: PodClient) -> list[dict[str, Any]]:
    return (await c.request("get_history")).data["items"]


async def test_rewinding_the_conversation_shows_it_as_before_that_prompt(
    workspace: Path, short_dir: Path
) -> None:
    replies = [ScriptedReply(text=f"answer {n}") for n in range(1, 4)] + [
        ScriptedReply(text="answer after the rewind")
    ]
    async with running_pod(workspace, short_dir, replies=replies) as pod:
        c = await pod.client()
        for text in ("one", "two", "three"):
            await run(c, text)
        before = await history(c)
        [(_, _), (second, _), _] = prompts(before)
        await c.send("rewind", {"to": second, "restore": "conversation"})
        rewound = await c.wait_for("rewound")
        assert rewound.data["to"] == second and rewound.data["prompt"] == "two"
        assert rewound.data["files"] is None
        await c.wait_for("status", status="idle")
        after = await history(c)
        assert after == [i for i in before if i["seq"] < second]
        await run(c, "two again")
        # The next request ends with the new prompt, right after the first exchange.
        last = pod.provider.requests[-1].messages
        texts = [b["text"] for m in last for b in m["content"] if b.get("type") == "text"]
        assert texts == ["one", "answer 1", "two again"]
        pod.assert_all_requests_valid()
        await c.close()
    path = pod.task.result().session_path
    loaded = load_session(path)
    assert [i.text for i in loaded.items if isinstance(i, UserMessage)] == ["one", "two again"]
    # Append-only: the rewound items are still in the file, before the rewind record.
    records = [json.loads(line) for line in path.read_text().splitlines()]
    texts = [r["item"].get("text") for r in records if r["type"] == "item"]
    rewinds = [r for r in records if r["type"] == "rewind"]
    assert "three" in texts
    assert rewinds == [
        {
            "type": "rewind",
            "phase": "done",
            "to_seq": second,
            "restore": "conversation",
            "checkpoint": None,
            "before": None,
        }
    ]
    seqs = [i.seq for i in loaded.items]
    assert seqs == sorted(seqs) and max(seqs) > max(i["seq"] for i in before)


async def test_a_paused_turn_is_closed_first_as_a_cancel_would(
    workspace: Path, short_dir: Path
) -> None:
    replies = [
        ScriptedReply(text="first"),
        ScriptedReply(text="slow " * 400, chunk_size=4, chunk_delay_s=0.02),
    ]
    async with running_pod(workspace, short_dir, replies=replies) as pod:
        c = await pod.client()
        await run(c, "one")
        await c.send("run", {"input": "two"})
        await c.wait_for("text_delta")
        await c.send("pause")
        await c.wait_for("run_end")
        [first, second] = prompts(await history(c))
        await c.send("rewind", {"to": second[0], "restore": "conversation"})
        events = await collect_until(c, "rewound", timeout=10)
        ends = [e.data for e in events if e.event == "turn_end"]
        assert ends == [{"turn": 2, "result": "cancelled"}]
        await c.wait_for("status", status="idle")
        assert prompts(await history(c)) == [first]
        await c.close()


@pytest.mark.parametrize(
    ("params", "said"),
    [
        ({"to": 2, "restore": "conversation"}, "item 2 is an assistant message, not a user"),
        ({"to": 999, "restore": "conversation"}, "there is no item 999 in the conversation"),
        ({"to": 1, "restore": "both", "off": True}, "cannot restore files: workspace checkpoints"),
    ],
)
async def test_a_rewind_that_cannot_be_done_changes_nothing(
    workspace: Path, short_dir: Path, params: dict[str, Any], said: str
) -> None:
    off = params.pop("off", False)
    async with running_pod(
        workspace, short_dir, replies=[ScriptedReply(text="a")], checkpoints=not off
    ) as pod:
        c = await pod.client()
        await run(c, "one")
        before = await history(c)
        reply = await c.request("rewind", params)
        assert reply.event == "error" and reply.data["code"] == "invalid_request"
        assert said in reply.data["message"]
        assert await history(c) == before
        assert (await c.status()).status == "idle"
        await c.close()


async def test_rewind_is_refused_while_running(workspace: Path, short_dir: Path) -> None:
    replies = [
        ScriptedReply(text="a"),
        ScriptedReply(text="slow " * 400, chunk_size=4, chunk_delay_s=0.02),
    ]
    async with running_pod(workspace, short_dir, replies=replies) as pod:
        c = await pod.client()
        await run(c, "one")
        await c.send("run", {"input": "two"})
        await c.wait_for("text_delta")
        reply = await c.request("rewind", {"to": 1, "restore": "conversation"})
        assert reply.event == "error" and reply.data["code"] == "already_running"
        await c.send("cancel")
        await c.wait_for("run_end")
        await c.close()


async def test_a_dry_run_previews_and_changes_nothing(workspace: Path, short_dir: Path) -> None:
    replies = [ScriptedReply(text="a"), ScriptedReply(text="b")]
    async with running_pod(workspace, short_dir, replies=replies) as pod:
        c = await pod.client()
        await run(c, "one")
        await run(c, "two")
        before = await history(c)
        reply = await c.request("rewind", {"restore": "conversation", "dry_run": True})
        assert reply.event == "rewind_preview"
        assert reply.data["prompt"] == "two" and reply.data["dropped"] == 2
        assert await history(c) == before
        await c.close()


async def test_a_rewind_survives_a_restart(workspace: Path, short_dir: Path) -> None:
    replies = [ScriptedReply(text="a"), ScriptedReply(text="b"), ScriptedReply(text="c")]
    async with running_pod(workspace, short_dir, replies=replies) as pod:
        c = await pod.client()
        await run(c, "one")
        await run(c, "two")
        [_, (second, _)] = prompts(await history(c))
        await c.send("rewind", {"to": second, "restore": "conversation"})
        await c.wait_for("rewound")
        await c.close()
    session = pod.task.result().session_path
    async with running_pod(
        workspace,
        short_dir,
        replies=[ScriptedReply(text="again")],
        continue_=True,
        session=session,
    ) as pod:
        c = await pod.client()
        assert [text for _, text in prompts(await history(c))] == ["one"]
        await run(c, "three")
        assert [text for _, text in prompts(await history(c))] == ["one", "three"]
        pod.assert_all_requests_valid()
        await c.close()


async def test_a_fork_continues_on_its_own(workspace: Path, short_dir: Path) -> None:
    replies = [ScriptedReply(text="a"), ScriptedReply(text="b"), ScriptedReply(text="c")]
    async with running_pod(workspace, short_dir, replies=replies) as pod:
        c = await pod.client()
        await run(c, "one")
        await run(c, "two")
        [_, (second, _)] = prompts(await history(c))
        reply = await c.request("fork", {"at": second, "name": "try another way"})
        assert reply.event == "forked", reply.data
        fork = Path(reply.data["path"])
        await run(c, "three")  # the original goes on
        await c.close()
    original = pod.task.result().session_path
    async with running_pod(
        workspace,
        short_dir,
        replies=[ScriptedReply(text="forked answer")],
        session=fork,
        continue_=True,
    ) as forked:
        c = await forked.client()
        # A client learns which session a pod writes from the pod itself (pod acp names its
        # sessions so).
        assert (await c.status()).session == str(fork)
        assert [text for _, text in prompts(await history(c))] == ["one"]
        await run(c, "two, differently")
        forked.assert_all_requests_valid()
        await c.close()
    assert [i.text for i in load_session(original).items if isinstance(i, UserMessage)] == [
        "one",
        "two",
        "three",
    ]
    loaded = load_session(fork)
    assert [i.text for i in loaded.items if isinstance(i, UserMessage)] == [
        "one",
        "two, differently",
    ]
    assert loaded.title == "try another way"
    assert loaded.header.model_extra == {"forked_from": str(original), "forked_at": second}


async def test_a_fork_into_another_folder_is_a_session_of_that_folder(
    workspace: Path, short_dir: Path, tmp_path: Path
) -> None:
    from orchestrator.adapters.session import sessions_dir

    copy = tmp_path / "copy"
    copy.mkdir()
    async with running_pod(workspace, short_dir, replies=[ScriptedReply(text="a")]) as pod:
        c = await pod.client()
        await run(c, "one")
        for bad in ("relative/path", str(tmp_path / "missing"), str(workspace / "README.md")):
            refused = await c.request("fork", {"workspace": bad})
            assert refused.event == "error" and "no fork: " in refused.data["message"], bad
        reply = await c.request("fork", {"workspace": str(copy)})
        assert reply.event == "forked", reply.data
        assert reply.data["workspace"] == str(copy.resolve())
        assert Path(reply.data["path"]).parent == sessions_dir(copy)
        await c.close()
    loaded = load_session(Path(reply.data["path"]))
    assert loaded.header.workspace == str(copy.resolve())
    assert [i.text for i in loaded.items if isinstance(i, UserMessage)] == ["one"]
    originals = [load_session(p).header for p in sessions_dir(workspace).glob("*.jsonl")]
    assert [h.model_extra for h in originals] == [{}]  # the original only; no fork there


async def test_the_first_request_after_a_rewind_reads_the_cache(
    workspace: Path, short_dir: Path, fake: FakeAnthropic
) -> None:
    for k in range(1, 7):
        (workspace / f"f{k}.txt").write_text(f"file {k} " + "words " * 700 + "\n")

    def reads(first: int) -> list[Reply]:
        return [
            Reply(tool_calls=[ToolCall("read_file", {"path": f"f{first}.txt"})]),
            Reply(tool_calls=[ToolCall("read_file", {"path": f"f{first + 1}.txt"})]),
            Reply(text="read them"),
        ]

    script = reads(1) + reads(3) + reads(5) + [Reply(text="after the rewind")]
    fake.responder = lambda body: script.pop(0)
    provider = fake_provider(fake)
    async with running_pod(workspace, short_dir, provider=provider) as pod:
        c = await pod.client()
        for n in range(3):
            await run(c, f"turn {n}: read two files")
        third = prompts(await history(c))[2][0]
        await c.send("rewind", {"to": third, "restore": "conversation"})
        await c.wait_for("rewound")
        await c.wait_for("status", status="idle")
        before = len(fake.requests)
        await run(c, "something else")
        await c.close()
    await provider.aclose()
    [after] = [r for r in fake.requests[before:] if r.path == "/v1/messages"]
    assert after.status == 200 and after.usage is not None
    usage = after.usage
    total = sum(usage.values()) - usage.get("output_tokens", 0)
    # Everything before the rewound prompt was sent (and cached) by the second turn's requests.
    assert usage["cache_read_input_tokens"] >= 0.8 * total, usage


async def test_a_rewind_across_a_compaction_brings_back_what_it_summarised(
    workspace: Path, short_dir: Path
) -> None:
    replies = [ScriptedReply(text=f"answer {n}") for n in range(5)]
    async with running_pod(workspace, short_dir, replies=replies, compact_keep_tokens=10) as pod:
        c = await pod.client()
        for text in ("one", "two", "three", "four"):
            await run(c, text)
        await c.send("compact")
        compaction = await c.wait_for("compaction")
        await c.wait_for("status", status="idle")
        covered = [
            seq for seq, _ in prompts(await history(c)) if seq <= compaction.data["last_seq"]
        ]
        assert len(covered) >= 2  # the prompt rewound to is one the summary replaced
        target = covered[1]
        await c.send("rewind", {"to": target, "restore": "conversation"})
        await c.wait_for("rewound")
        await c.wait_for("status", status="idle")
        items = await history(c)
        assert "compaction" not in {i["kind"] for i in items}  # it went with the tail
        assert [text for _, text in prompts(items)] == ["one"]
        await run(c, "two, again")
        # The model sees the conversation verbatim again, not the summary.
        last = pod.provider.requests[-1].messages
        texts = [b.get("text") for m in last for b in m["content"] if b.get("type") == "text"]
        assert texts == ["one", "answer 0", "two, again"]
        pod.assert_all_requests_valid()
        await c.close()
